"""Task metrics that reach /metrics from every worker on every host: counters in the cache.

A Celery worker's pool processes are not gunicorn's workers: they do not write to the web's
PROMETHEUS_MULTIPROC_DIR and usually run on another host, so a counter kept in their memory
would never be scraped. So each run that ends adds to counters in the shared cache (one
round trip on Redis, CacheBatch), and TaskMetricsCollector (settings.TOOLHUB_METRICS_COLLECTORS)
reads them at scrape time, whichever web process serves it. A counter lives COUNTER_TTL_S
from its first run, or until the cache is flushed; Prometheus reads its restart as a reset,
as it does a restarted process's.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterator

from django.core.cache import cache
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from redis import RedisError

from .cache import CacheBatch
from .task_names import TaskName

logger = logging.getLogger("toolhub.tasks")

OK, FAILED, TIMED_OUT, RETRIED = "ok", "failed", "timed_out", "retried"
OUTCOMES = (OK, FAILED, TIMED_OUT, RETRIED)
# Seconds, from an idle beat job to the rollup's half hour.
BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 900, 1800)
COUNTER_TTL_S = 90 * 24 * 3600
_PREFIX = "toolhub:task_metrics"


def _runs_key(task: str, outcome: str) -> str:
    return f"{_PREFIX}:runs:{task}:{outcome}"


def _bucket_key(task: str, index: int) -> str:
    # Runs that took at most BUCKETS[index] seconds and more than the bucket before
    # (index len(BUCKETS): longer than the last); made cumulative when read.
    return f"{_PREFIX}:bucket:{task}:{index}"


def _milliseconds_key(task: str) -> str:
    return f"{_PREFIX}:ms:{task}"


def task_run_recorded(*, task: str, outcome: str, seconds: float) -> None:
    """Count one run of `task` that ended with `outcome` after `seconds`. A cache that does
    not answer loses the count, never the task's result (logged)."""
    batch = CacheBatch(cache)
    batch.count(_runs_key(task, outcome), COUNTER_TTL_S)
    batch.count(_bucket_key(task, bisect.bisect_left(BUCKETS, seconds)), COUNTER_TTL_S)
    batch.count(_milliseconds_key(task), COUNTER_TTL_S, delta=round(seconds * 1000))
    try:
        batch.run()
    except (RedisError, OSError) as exc:
        logger.warning("task metrics of %s not counted: the cache did not answer (%s)", task, exc)


class TaskMetricsCollector:
    """toolhub_task_runs_total and toolhub_task_seconds of every task name, at scrape time:
    one read of the cache. When the cache does not answer they are left out of the scrape."""

    def collect(self) -> Iterator[Metric]:
        names = [name.value for name in TaskName]
        keys = [
            *(_runs_key(name, outcome) for name in names for outcome in OUTCOMES),
            *(_bucket_key(name, index) for name in names for index in range(len(BUCKETS) + 1)),
            *(_milliseconds_key(name) for name in names),
        ]
        try:
            found = cache.get_many(keys)
        except (RedisError, OSError) as exc:
            logger.warning("task metrics left out of this scrape: the cache did not answer (%s)", exc)
            return
        runs = CounterMetricFamily(
            "toolhub_task_runs",
            "Celery task runs that ended, by task name and outcome: ok, failed (raised), "
            "timed_out (soft time limit), retried. A run killed at its hard limit or with its "
            "worker is not counted (the worker logs it).",
            labels=["task", "outcome"],
        )
        durations = HistogramMetricFamily(
            "toolhub_task_seconds",
            "Duration of Celery task runs that ended, whatever their outcome, by task name.",
            labels=["task"],
        )
        for name in names:
            for outcome in OUTCOMES:
                runs.add_metric([name, outcome], int(found.get(_runs_key(name, outcome), 0)))
            cumulative, buckets = 0, []
            for index, bound in enumerate((*BUCKETS, float("inf"))):
                cumulative += int(found.get(_bucket_key(name, index), 0))
                buckets.append(("+Inf" if bound == float("inf") else str(bound), cumulative))
            seconds = int(found.get(_milliseconds_key(name), 0)) / 1000
            durations.add_metric([name], buckets=buckets, sum_value=seconds)
        yield runs
        yield durations
