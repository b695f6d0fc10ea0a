"""Time admin pages and the operators' dashboard for a window, reading raw rows or hourly
rollups, and time rolling the invocation log up.

Reusable on any filled database (scripts/bench_logs.py fills a scratch one): a page through
Django's test client, one warm-up and the median of `runs` loads, with the SQL statements
of a load.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.dashboards.models import DailyLatencyRollup, InvocationRollup, LatencyRollup, RollupCoverage
from apps.dashboards.rollups import RollupReport, roll_up_invocations

ROLLUPS = [model._meta.db_table for model in (InvocationRollup, LatencyRollup, DailyLatencyRollup)]


@dataclass(frozen=True)
class PageTiming:
    window: str
    median_ms: float
    queries: int


def timed_loads(
    client: Client, url: str, *, runs: int = 5, slow_s: float | None = None
) -> tuple[float, int, list[str]]:
    """Median ms of `runs` loads after a warm-up, and the number and SQL of a load's queries.
    A page whose warm-up took over `slow_s` seconds is timed by that load alone (no SQL)."""
    started = time.perf_counter()
    assert client.get(url).status_code == 200, url
    if slow_s is not None and time.perf_counter() - started > slow_s:
        return (time.perf_counter() - started) * 1000, 0, []
    samples = []
    for _ in range(runs):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, url
    return statistics.median(samples), len(queries), [query["sql"] for query in queries.captured_queries]


def time_dashboard(user: User, window: str, *, runs: int = 5) -> PageTiming:
    client = Client()
    client.force_login(user)
    url = f"{reverse('admin:toolhub_dashboard')}?window={window}"
    median_ms, queries, _ = timed_loads(client, url, runs=runs)
    return PageTiming(window, median_ms, queries)


@contextmanager
def raw_rows_only() -> Iterator[None]:
    """The dashboard as it reads without rollups: their coverage hidden, then put back."""
    with transaction.atomic():
        coverage = list(RollupCoverage.objects.all())
        RollupCoverage.objects.all().delete()
        try:
            yield
        finally:
            RollupCoverage.objects.bulk_create(coverage)


def timed_rollup(*, from_scratch: bool) -> tuple[RollupReport, float]:
    """A rollup run and its seconds: from the oldest raw row with every rollup row and the
    coverage deleted first, or as the scheduled job runs (the last hours again, and new ones).
    The rollup tables are analyzed after, as autovacuum would soon do."""
    if from_scratch:
        RollupCoverage.objects.all().delete()
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {', '.join(ROLLUPS)}")
    started = time.perf_counter()
    report = roll_up_invocations()
    elapsed = time.perf_counter() - started
    with connection.cursor() as cursor:
        for table in ROLLUPS:
            cursor.execute(f"ANALYZE {table}")
    return report, elapsed
