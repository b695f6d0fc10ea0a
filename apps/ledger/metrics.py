"""The ledger's figures for /metrics, computed at scrape time.

One aggregated query each, under a statement timeout on PostgreSQL, so a scrape costs the
same at ten thousand rows as at ten million and can never hold a web worker for long. When
the database does not answer, the figures are left out of that scrape (it still succeeds).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db import DatabaseError, InterfaceError
from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric

from apps.common.metrics import bounded_scrape_queries

from .models import LedgerEntry, LedgerState

logger = logging.getLogger("toolhub.metrics")


@dataclass(frozen=True)
class TriageStats:
    size: int
    oldest_since: datetime | None


def ledger_state_counts() -> dict[str, int]:
    """Entries per state across all tenants, every state present (0 when none)."""
    counts = dict.fromkeys(LedgerState.values, 0)
    for row in LedgerEntry.objects.order_by().values("state").annotate(n=Count("pk")):
        counts[row["state"]] = row["n"]
    return counts


def triage_queue_stats() -> TriageStats:
    """Entries waiting for a person (unknown, given up by reconciliation), and since when."""
    row = LedgerEntry.objects.filter(state=LedgerState.UNKNOWN, triage_since__isnull=False).aggregate(
        size=Count("pk"), oldest=Min("triage_since")
    )
    return TriageStats(size=row["size"], oldest_since=row["oldest"])


def _bounded_reads() -> tuple[dict[str, int], TriageStats]:
    with bounded_scrape_queries():
        return ledger_state_counts(), triage_queue_stats()


class LedgerCollector:
    """toolhub_ledger_entries{state}, toolhub_triage_queue_size, toolhub_triage_oldest_age_seconds."""

    def collect(self) -> Iterator[Metric]:
        try:
            counts, triage = _bounded_reads()
        except (DatabaseError, InterfaceError) as exc:
            logger.warning("ledger figures left out of this scrape: %s", type(exc).__name__)
            return
        entries = GaugeMetricFamily(
            "toolhub_ledger_entries", "Ledger entries by state, all tenants.", labels=["state"]
        )
        for state, count in counts.items():
            entries.add_metric([state], count)
        yield entries
        yield GaugeMetricFamily(
            "toolhub_triage_queue_size",
            "Unknown entries reconciliation gave up on: an operator must settle them.",
            value=triage.size,
        )
        age = (timezone.now() - triage.oldest_since).total_seconds() if triage.oldest_since else 0.0
        yield GaugeMetricFamily(
            "toolhub_triage_oldest_age_seconds",
            "How long the oldest entry has waited in the triage queue (0 when it is empty).",
            value=age,
        )
