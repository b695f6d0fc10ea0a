"""GET /metrics: what the processes counted, plus what is computed at scrape time.

Counters and histograms (apps/gateway/metrics.py, the refusals in apps/common/metrics.py) are
kept by each process. Under gunicorn, PROMETHEUS_MULTIPROC_DIR is set (gunicorn.conf.py): each
worker writes its values to files there and a scrape, whichever worker serves it, adds up all
of them. Gauges about shared state (ledger, triage, queue) are computed by the collectors named
in settings.TOOLHUB_METRICS_COLLECTORS, once per scrape, with one aggregated query each.
"""

from __future__ import annotations

import hmac
import logging
import math
import os
from collections.abc import Iterator

import redis
from django.conf import settings
from django.utils.module_loading import import_string
from kombu.exceptions import KombuError
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric

from toolhub.celery import app as celery_app

logger = logging.getLogger("toolhub.metrics")

_BROKER_TIMEOUT_S = 1.0


class _ThisProcess:
    """The default registry as a collector: what a single process (runserver, tests) counted."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def scrape_registry() -> CollectorRegistry:
    """A registry for one scrape: every process's metrics and the scrape-time collectors."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_ThisProcess())
    for path in settings.TOOLHUB_METRICS_COLLECTORS:
        registry.register(import_string(path)())
    return registry


def metrics_text() -> bytes:
    """The Prometheus text exposition of everything above."""
    return generate_latest(scrape_registry())


def scrape_authorized(authorization_header: str) -> bool:
    """Whether a scrape may read /metrics: always when no token is configured."""
    token = settings.TOOLHUB_METRICS_TOKEN
    if not token:
        return True
    return hmac.compare_digest(authorization_header.encode(), f"Bearer {token}".encode())


def celery_queue_length(queue: str) -> float:
    """Messages waiting in `queue` at the broker; NaN when the broker does not answer in time."""
    url = celery_app.conf.broker_read_url or celery_app.conf.broker_url
    if url.startswith(("redis://", "rediss://")):
        return _redis_queue_length(url, queue)
    return _declared_queue_length(queue)


def _redis_queue_length(url: str, queue: str) -> float:
    # kombu keeps a Redis queue as a list named after it (ToolHub sends no task priorities,
    # so there are no priority sub-lists).
    client = redis.Redis.from_url(
        url, socket_timeout=_BROKER_TIMEOUT_S, socket_connect_timeout=_BROKER_TIMEOUT_S
    )
    try:
        return float(client.llen(queue))
    except (redis.RedisError, OSError) as exc:
        logger.warning("broker unreachable at scrape time: %s", type(exc).__name__)
        return math.nan
    finally:
        client.close()


def _declared_queue_length(queue: str) -> float:
    with celery_app.connection_for_read() as conn:
        try:
            conn.ensure_connection(max_retries=1, timeout=_BROKER_TIMEOUT_S)
            return float(conn.default_channel.queue_declare(queue=queue, passive=True).message_count)
        except (KombuError, OSError, *conn.connection_errors, *conn.channel_errors) as exc:
            logger.warning("broker did not report the queue at scrape time: %s", type(exc).__name__)
            return math.nan


class CeleryQueueCollector:
    """toolhub_celery_queue_length{queue}: tasks waiting for a worker."""

    def collect(self) -> Iterator[Metric]:
        queue = celery_app.conf.task_default_queue
        family = GaugeMetricFamily(
            "toolhub_celery_queue_length",
            "Tasks waiting in the broker for a worker (NaN: the broker did not answer the scrape).",
            labels=["queue"],
        )
        family.add_metric([queue], celery_queue_length(queue))
        yield family
