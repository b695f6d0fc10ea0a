"""Reads that may come from a read replica, and the router that sends them there.

With DATABASE_REPLICA_URL set, settings add a `replica` database alias and ReplicaRouter.
A router sees models, not callers, so the callers that may read stale rows say so:
`replica_reads()` around the code (a management command's export), or
ReplicaReadsMiddleware for the views in REPLICA_VIEWS (the admin's lists and the
dashboard, GET and HEAD only). Everything else reads the primary: the pipeline, the
ledger, the admin's forms and actions, Celery tasks. Whatever the caller, writes go to the
primary, and so does every read inside a transaction (it may be about to write what it
read) and every read of who is logged in and what they may see (sessions, users, staff
scopes), which must never lag behind a change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from fnmatch import fnmatchcase
from typing import Any

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import HttpRequest, HttpResponse

REPLICA = "replica"
# Views whose reads may lag a little behind the primary, by URL name.
REPLICA_VIEWS = ("admin:*_changelist", "admin:toolhub_dashboard")
# Models read from the primary whoever asks (app labels, or app_label.model).
PRIMARY_ONLY = frozenset({"auth", "sessions", "contenttypes", "tenancy.staffscope"})

_replica_reads: ContextVar[bool] = ContextVar("replica_reads", default=False)


@contextmanager
def replica_reads() -> Iterator[None]:
    """Let the reads in this block come from the replica (when one is configured)."""
    token = _replica_reads.set(True)
    try:
        yield
    finally:
        _replica_reads.reset(token)


class ReplicaRouter:
    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        if (
            _replica_reads.get()
            and model._meta.app_label not in PRIMARY_ONLY
            and model._meta.label_lower not in PRIMARY_ONLY
            and not connections[DEFAULT_DB_ALIAS].in_atomic_block
        ):
            return REPLICA
        return DEFAULT_DB_ALIAS

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # the replica holds the primary's rows

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS  # the replica follows the primary's schema


class ReplicaReadsMiddleware:
    """Runs the views of REPLICA_VIEWS, template rendering included, in `replica_reads()`."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        if REPLICA not in settings.DATABASES:
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            return self.get_response(request)
        finally:
            token = getattr(request, "_replica_reads_token", None)
            if token is not None:
                _replica_reads.reset(token)

    def process_view(self, request: HttpRequest, view: Any, args: Any, kwargs: Any) -> None:
        match = request.resolver_match
        if request.method in ("GET", "HEAD") and match is not None and any(
            fnmatchcase(match.view_name, pattern) for pattern in REPLICA_VIEWS
        ):
            request._replica_reads_token = _replica_reads.set(True)  # type: ignore[attr-defined]
