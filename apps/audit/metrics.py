"""The logs' retention figures for /metrics, computed at scrape time (settings.TOOLHUB_METRICS_COLLECTORS).

toolhub_log_oldest_kept_day{log} is a unix timestamp (midnight UTC of the oldest day with
rows), so an alert compares it with time(): `time() - toolhub_log_oldest_kept_day{log=
"invocations"} > 32 * 86400` says retention stopped running. All figures come from one
statement of indexed lookups (the minimum of each log's time index, the count of each
small default partition) under a statement timeout; when the database does not answer
they are left out.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.db import DatabaseError, InterfaceError
from prometheus_client.core import GaugeMetricFamily, Metric

from apps.common.metrics import bounded_scrape_queries

from .partitions import log_figures

logger = logging.getLogger("toolhub.metrics")


class LogRetentionCollector:
    """toolhub_log_oldest_kept_day{log}, toolhub_log_default_partition_rows{log}."""

    def collect(self) -> Iterator[Metric]:
        try:
            with bounded_scrape_queries():
                figures = log_figures()
        except (DatabaseError, InterfaceError) as exc:
            logger.warning("log retention figures left out of this scrape: %s", type(exc).__name__)
            return
        oldest = GaugeMetricFamily(
            "toolhub_log_oldest_kept_day",
            "Midnight UTC (unix time) of the oldest day the log still holds; absent when the log is empty.",
            labels=["log"],
        )
        default = GaugeMetricFamily(
            "toolhub_log_default_partition_rows",
            "Rows in the log's default partition: their time had no partition (0 off PostgreSQL).",
            labels=["log"],
        )
        for log in figures:
            if log.oldest_kept_day is not None:
                oldest.add_metric([log.log], log.oldest_kept_day.timestamp())
            default.add_metric([log.log], log.default_partition_rows)
        yield oldest
        yield default
