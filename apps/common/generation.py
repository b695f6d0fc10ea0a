"""A counter in the cache that says "this changed", for per-process memos to be keyed on.

Each process compares the value it memoized under with the current one, so every process sees
a change on its next read without tracking who memoized what. A change is announced once the
writing transaction commits, never before: no process memoizes a state that is rolled back.
"""

from __future__ import annotations

import time

from django.core.cache import cache
from django.db import transaction


class Generation:
    """The counter kept under `key`: it only grows, even across a lost or flushed cache."""

    def __init__(self, key: str) -> None:
        self.key = key

    def read(self, *, already_read: int | None = None) -> int:
        """The current value. `already_read` is one a caller fetched together with other keys,
        in one round trip; None reads it now."""
        value = already_read if already_read is not None else cache.get(self.key)
        if value is None:
            # A counter lost to eviction or a flush restarts at the clock in milliseconds, above
            # any value it had before, so a process never mistakes old memos for current ones.
            fresh = time.time_ns() // 1_000_000
            cache.add(self.key, fresh, timeout=None)
            # Another process's add won (its value is as fresh), or a flush came between: ours then.
            value = cache.get(self.key, fresh)
        return int(value)

    def bump(self) -> None:
        try:
            cache.incr(self.key)
        except ValueError:  # the key is missing: start a fresh, larger value
            self.read()

    def changed(self) -> None:
        """Announce a change once the current transaction commits (at once when there is none)."""
        transaction.on_commit(self.bump)
