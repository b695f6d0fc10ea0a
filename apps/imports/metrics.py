"""toolhub_upstream_drift{upstream} for /metrics: open drift findings per MCP server, computed
at scrape time in one aggregated query under the scrape's statement timeout (left out of a
scrape the database does not answer in time)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.db import DatabaseError, InterfaceError
from django.db.models import Count, Q
from prometheus_client.core import GaugeMetricFamily, Metric

from apps.common.metrics import bounded_scrape_queries
from apps.upstreams.models import Upstream, UpstreamKind

from .sync import upstream_label_of

logger = logging.getLogger("toolhub.metrics")


def open_drift_per_upstream() -> dict[str, int]:
    """Every MCP upstream (as upstream_label names it), with its open drift findings (0: none)."""
    upstreams = (
        Upstream.objects.filter(kind=UpstreamKind.MCP).select_related("tenant")
        .annotate(open_drift=Count("drift_findings", filter=Q(drift_findings__reviewed_at__isnull=True)))
    )
    return {upstream_label_of(upstream): upstream.open_drift for upstream in upstreams}


class DriftCollector:
    """toolhub_upstream_drift{upstream}."""

    def collect(self) -> Iterator[Metric]:
        try:
            with bounded_scrape_queries():
                counts = open_drift_per_upstream()
        except (DatabaseError, InterfaceError) as exc:
            logger.warning("drift figures left out of this scrape: %s", type(exc).__name__)
            return
        family = GaugeMetricFamily(
            "toolhub_upstream_drift",
            "Open drift findings per MCP server upstream (a tenant's as slug/name): changes of its "
            "tools since they were published, waiting for a curator's review.",
            labels=["upstream"],
        )
        for upstream, count in sorted(counts.items()):
            family.add_metric([upstream], count)
        yield family
