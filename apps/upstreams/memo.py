"""What `upstream_for_call` keeps between calls, per process: each upstream's row (with its
credential and launcher) and the credential values decrypted, so that a call to a known
upstream makes no query and decrypts nothing.

Never stale, never someone else's:
- Entries are keyed on exactly what the query was asked: the tool's owning tenant and the
  upstream's name; an end user's token on the credential, the agent and the subject. A call
  finds only what its own query would have found.
- The memo is stamped with the upstream generation (read in the round trip of the task's
  counters for a governed call, in one of its own otherwise) and with the settings its
  values depend on (the encryption keys, SECRET_KEY). Every saved change of an upstream, a
  credential, an end user's token or a launcher, and every deleted upstream or token, bumps
  the generation once it commits (services.py; a credential or launcher still in use cannot
  be deleted), so every process, gunicorn's and Celery's, drops its whole memo on its next
  call. The stamp is read before the rows, so a row read before a write commits is only ever
  kept under the generation that write replaces.
- A row changed around the services (SQL by hand) is seen once the generation moves (the
  next change saved through them) or the process restarts.
- Failures (no such upstream, an unreadable credential, no token for this user) are not kept:
  the next call asks the database again.

The values live in process memory only, as they already do while a call runs; each table
holds at most MEMO_LIMIT entries (the oldest leaves first).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from apps.common.generation import Generation

from .models import Upstream

UPSTREAM_GENERATION_KEY = "toolhub:upstream-generation"
MEMO_LIMIT = 4096

_GENERATION = Generation(UPSTREAM_GENERATION_KEY)


def upstreams_changed() -> None:
    """Drop every process's memo of upstreams once the current transaction commits (at once
    when there is none)."""
    _GENERATION.changed()


@dataclass(frozen=True)
class KnownUpstream:
    """An upstream as its query found it (credential and launcher loaded: read-only from here
    on), with its shared credential's value decrypted (None: no credential, or one per user)."""

    upstream: Upstream
    value: str | None = field(repr=False)


class UpstreamMemo:
    """The entries valid under one stamp."""

    def __init__(self, stamp: tuple[Any, ...]) -> None:
        self.stamp = stamp
        # (owning tenant or None for the platform, name) → the upstream that tenant's tools reach.
        self.upstreams: dict[tuple[int | None, str], KnownUpstream] = {}
        # (credential, agent, subject) → that end user's token, registered by that agent.
        self.subject_values: dict[tuple[int, int, str], str] = {}

    def remember(self, table: dict[Any, Any], key: Hashable, value: Any) -> None:
        with _LOCK:
            if len(table) >= MEMO_LIMIT:
                table.pop(next(iter(table)))
            table[key] = value


_LOCK = threading.Lock()
_current = UpstreamMemo(stamp=())


def upstream_memo(*, generation: int | None = None) -> UpstreamMemo:
    """The memo valid now: a new, empty one when anything it depends on changed since.
    `generation`: the upstreams' generation as the caller read it (None: read it now)."""
    global _current
    stamp = (_GENERATION.read(already_read=generation), tuple(settings.TOOLHUB_ENCRYPTION_KEYS),
             settings.SECRET_KEY)
    memo = _current
    if memo.stamp != stamp:
        with _LOCK:
            if _current.stamp != stamp:
                _current = UpstreamMemo(stamp)
            memo = _current
    return memo
