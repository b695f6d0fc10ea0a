"""Counters the request layers of every app share (refusals of a request as a whole), and
the bound on the queries of scrape-time gauges (apps/*/metrics.py).

The scrape that exposes them (GET /metrics) is toolhub/metrics.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction
from prometheus_client import Counter

SCRAPE_QUERY_TIMEOUT_MS = 2000

REFUSALS = Counter(
    "toolhub_refusals",
    "Requests answered with an error as a whole, before or instead of any tool call (401 key, "
    "400 envelope, 413 body, 429 agent rate, 503 database or broker down, ...), by HTTP status "
    "and error kind. Tool calls' own outcomes are toolhub_invocations_total.",
    ["status", "kind"],
)


def refusal_observed(*, status: int, kind: str) -> None:
    REFUSALS.labels(status=str(status), kind=kind).inc()


@contextmanager
def bounded_scrape_queries() -> Iterator[None]:
    """A transaction whose statements PostgreSQL cancels after SCRAPE_QUERY_TIMEOUT_MS, so a
    scrape-time gauge can never hold a web worker for long (DatabaseError when it would)."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL statement_timeout = {SCRAPE_QUERY_TIMEOUT_MS}")
        yield
