"""The figures of the operators' dashboard: aggregated queries over a bounded window.

Every query is a GROUP BY over an index range (the window's `created_at`, the ledger's
`state`, the triage queue's partial index), never a scan of the whole log, so the page stays
interactive with millions of rows (docs/performance.md). Every figure takes `tenant_id`:
None for every tenant (unscoped staff), else only that tenant's rows.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Aggregate, Count, FloatField, Q, QuerySet
from django.db.models.functions import TruncHour, TruncMinute
from django.utils import timezone

from apps.audit.models import Invocation
from apps.capabilities.models import CapabilityReason, CapabilityRequest, CapabilityStatus
from apps.catalog.lint import SEVERITY_ORDER
from apps.catalog.models import Tool
from apps.catalog.selectors import UpstreamDrift, catalog_findings, open_drift_by_upstream
from apps.common.admin_filters import AGES
from apps.ledger.models import Approval, ApprovalStatus, LedgerEntry, LedgerState

# window → (length, bucket function of its calls-over-time chart)
WINDOWS: dict[str, tuple[timedelta, Any]] = {
    "1h": (timedelta(hours=1), TruncMinute),
    "1d": (timedelta(days=1), TruncHour),
    "7d": (timedelta(days=7), TruncHour),
}
UNKNOWN_AGE_BUCKETS = ("1h", "1h-1d", "1d-7d", "gt7d")
# Stacking order of the calls chart: good outcomes at the bottom, errors on top.
STATUS_ORDER = ("ok", "empty", "accepted", "pending_approval", "error")
TOP = 8


class Percentile(Aggregate):
    """PostgreSQL's PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY expression)."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(%(percentile)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


@dataclass(frozen=True)
class ToolLatency:
    tool: str
    calls: int
    errors: int
    p50_ms: float
    p95_ms: float


@dataclass(frozen=True)
class LintSummary:
    code: str
    severity: str
    count: int
    tools: list[str]


@dataclass
class Overview:
    window: str
    since: datetime
    calls_total: int = 0
    errors_total: int = 0
    # One row per time bucket: {"bucket": datetime, "<status>": count, ...}
    calls_over_time: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    error_kinds: list[tuple[str, int]] = field(default_factory=list)
    latency: list[ToolLatency] = field(default_factory=list)
    unknown_by_age: list[tuple[str, str, int]] = field(default_factory=list)
    triage_size: int = 0
    pending_approvals: int = 0
    # Missing capabilities, and apart from them existing tools called outside their phase.
    capability_requests: list[CapabilityRequest] = field(default_factory=list)
    phase_misses: list[CapabilityRequest] = field(default_factory=list)
    lint: list[LintSummary] = field(default_factory=list)
    drift: list[UpstreamDrift] = field(default_factory=list)

    @property
    def unknown_total(self) -> int:
        return sum(n for _, _, n in self.unknown_by_age)


def _of_tenant(queryset: QuerySet, tenant_id: int | None) -> QuerySet:
    return queryset if tenant_id is None else queryset.filter(tenant_id=tenant_id)


def dashboard_overview(*, tenant_id: int | None, window: str, now: datetime | None = None) -> Overview:
    """Every figure of the dashboard for one window ("1h", "1d" or "7d")."""
    now = now or timezone.now()
    length, bucket = WINDOWS[window]
    overview = Overview(window=window, since=now - length)
    calls = _of_tenant(Invocation.objects.filter(created_at__gte=overview.since), tenant_id)
    _calls_over_time(overview, calls, bucket)
    overview.error_kinds = [
        (row["kind"] or "(none)", row["n"])
        for row in calls.filter(status="error").values("kind").annotate(n=Count("id")).order_by("-n", "kind")
    ]
    overview.latency = _latency_per_tool(calls)
    overview.unknown_by_age = _unknown_by_age(tenant_id, now)
    overview.triage_size = _of_tenant(
        LedgerEntry.objects.filter(state=LedgerState.UNKNOWN, triage_since__isnull=False), tenant_id
    ).count()
    overview.pending_approvals = _of_tenant(
        Approval.objects.filter(status=ApprovalStatus.PENDING, expires_at__gt=now), tenant_id
    ).count()
    open_requests = _of_tenant(CapabilityRequest.objects.select_related("tenant"), tenant_id).filter(
        status__in=[CapabilityStatus.OPEN, CapabilityStatus.PLANNED]
    ).order_by("-count", "name")
    overview.capability_requests = list(open_requests.filter(reason=CapabilityReason.UNKNOWN)[:TOP])
    overview.phase_misses = list(open_requests.filter(reason=CapabilityReason.NOT_IN_PHASE)[:TOP])
    overview.lint = _lint_summary(tenant_id)
    overview.drift = open_drift_by_upstream(tenant_id=tenant_id)
    return overview


def _calls_over_time(overview: Overview, calls: QuerySet, bucket: Any) -> None:
    rows = calls.annotate(bucket=bucket("created_at")).values("bucket", "status").annotate(n=Count("id"))
    by_bucket: dict[datetime, dict[str, Any]] = {}
    statuses: set[str] = set()
    for row in rows:
        by_bucket.setdefault(row["bucket"], {"bucket": row["bucket"]})[row["status"]] = row["n"]
        statuses.add(row["status"])
        overview.calls_total += row["n"]
        if row["status"] == "error":
            overview.errors_total += row["n"]
    overview.calls_over_time = [by_bucket[b] for b in sorted(by_bucket)]
    overview.statuses = sorted(statuses, key=lambda s: (STATUS_ORDER.index(s) if s in STATUS_ORDER else 9, s))


def _latency_per_tool(calls: QuerySet) -> list[ToolLatency]:
    """p50 and p95 per tool that exists: a name no tool has (an unknown_tool call) is for the
    capability requests, not the latency chart."""
    calls = calls.filter(Q(version_number__isnull=False) | Q(tool_name__in=Tool.objects.values("name")))
    counts = calls.values("tool_name").annotate(
        calls=Count("id"), errors=Count("id", filter=Q(status="error"))
    )
    if connection.vendor == "postgresql":
        rows = counts.annotate(p50=Percentile("latency_ms", percentile=0.5),
                               p95=Percentile("latency_ms", percentile=0.95))
        latencies = [ToolLatency(r["tool_name"], r["calls"], r["errors"], r["p50"], r["p95"]) for r in rows]
    else:  # the zero-service SQLite demo has no percentile aggregate: fine at demo sizes
        samples: dict[str, list[float]] = defaultdict(list)
        for tool, latency in calls.values_list("tool_name", "latency_ms"):
            samples[tool].append(latency)
        latencies = [
            ToolLatency(r["tool_name"], r["calls"], r["errors"], _quantile(samples[r["tool_name"]], 0.5),
                        _quantile(samples[r["tool_name"]], 0.95))
            for r in counts
        ]
    return sorted(latencies, key=lambda t: (-t.calls, t.tool))[:TOP * 2]


def _quantile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def _unknown_by_age(tenant_id: int | None, now: datetime) -> list[tuple[str, str, int]]:
    """Unknown entries in disjoint age buckets, counted in one query on the state index."""
    def in_bucket(key: str) -> Q:
        _, least, greatest = AGES[key]
        condition = Q()
        if least is not None:
            condition &= Q(created_at__lt=now - least)
        if greatest is not None:
            condition &= Q(created_at__gte=now - greatest)
        return condition

    counts = _of_tenant(LedgerEntry.objects.filter(state=LedgerState.UNKNOWN), tenant_id).aggregate(
        **{key: Count("id", filter=in_bucket(key)) for key in UNKNOWN_AGE_BUCKETS}
    )
    return [(key, AGES[key][0], counts[key]) for key in UNKNOWN_AGE_BUCKETS]


def _lint_summary(tenant_id: int | None) -> list[LintSummary]:
    grouped: dict[str, list[Any]] = {}
    for finding in catalog_findings(tenant_id=tenant_id):
        grouped.setdefault(finding.code, []).append(finding)
    summaries = [
        LintSummary(code, found[0].severity, len(found), sorted({f.tool for f in found if f.tool}))
        for code, found in grouped.items()
    ]
    return sorted(summaries, key=lambda s: (SEVERITY_ORDER[s.severity], -s.count, s.code))[:TOP]
