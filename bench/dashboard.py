"""Time the operators' dashboard for a window, reading raw rows or hourly rollups.

Reusable on any filled database (scripts/bench_dashboard.py fills a scratch one): the
dashboard view through Django's test client, logged in as the given user, one warm-up and
the median of `runs` loads, with the number of SQL statements of a load.
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

from apps.dashboards.models import RollupCoverage


@dataclass(frozen=True)
class PageTiming:
    window: str
    median_ms: float
    queries: int


def time_dashboard(user: User, window: str, *, runs: int = 5) -> PageTiming:
    client = Client()
    client.force_login(user)
    url = f"{reverse('admin:toolhub_dashboard')}?window={window}"
    assert client.get(url).status_code == 200, url
    samples = []
    for _ in range(runs):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, url
    return PageTiming(window, statistics.median(samples), len(queries))


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
