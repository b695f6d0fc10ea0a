"""One counter that says "the catalog changed": a version published, deprecated or retired,
a grant, policy, tool or toolset edited.

Caches of resolved tools and compiled validators are keyed on it, so every process sees a
change on its next request without tracking who cached what. It sits below catalog and
tenancy because both change what agents see (tools and versions; grants and policies).
"""

from __future__ import annotations

import time

from django.core.cache import cache
from django.db import transaction

CATALOG_GENERATION_KEY = "toolhub:catalog-generation"


def catalog_generation(*, already_read: int | None = None) -> int:
    """The current generation; changes (grows) whenever the catalog changes.

    `already_read` is the value a caller fetched together with other keys (authentication
    reads it with the agent key, in one round trip); None reads it now.
    """
    generation = already_read if already_read is not None else cache.get(CATALOG_GENERATION_KEY)
    if generation is None:
        # A counter lost to eviction or a flush restarts at the clock in milliseconds, above
        # any value it had before, so a process never mistakes old memos for current ones.
        fresh = time.time_ns() // 1_000_000
        cache.add(CATALOG_GENERATION_KEY, fresh, timeout=None)
        # Another process's add won (its value is as fresh), or a flush came between: ours then.
        generation = cache.get(CATALOG_GENERATION_KEY, fresh)
    return int(generation)


def _bump() -> None:
    try:
        cache.incr(CATALOG_GENERATION_KEY)
    except ValueError:  # the key is missing: start a fresh, larger generation
        catalog_generation()


def catalog_changed() -> None:
    """Invalidate every catalog-derived cache once the current transaction commits
    (at once when there is none), so no process caches a state that is rolled back."""
    transaction.on_commit(_bump)
