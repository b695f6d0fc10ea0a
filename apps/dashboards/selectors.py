"""The figures of the operators' dashboard: aggregated queries over a bounded window.

Every query is a GROUP BY over an index range (the window's `created_at`, the ledger's
`state`, the triage queue's partial index), never a scan of the whole log, so the page stays
interactive with millions of rows (docs/performance.md). The calls of the 1-, 7- and 30-day
windows come from hourly rollups (apps/dashboards/rollups.py) for every whole hour they
cover, and from raw rows for the rest: the same counts, and percentiles from latency
buckets added up (apps/dashboards/latency_buckets.py). Every figure takes `tenant_id`:
None for every tenant (unscoped staff), else only that tenant's rows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import TruncDay, TruncHour, TruncMinute
from django.utils import timezone

from apps.audit.models import Invocation
from apps.capabilities.models import CapabilityReason, CapabilityRequest, CapabilityStatus
from apps.catalog.lint import SEVERITY_ORDER
from apps.catalog.models import Tool
from apps.catalog.selectors import UpstreamDrift, catalog_findings, open_drift_by_upstream
from apps.common.admin_filters import AGES
from apps.ledger.models import Approval, ApprovalStatus, LedgerEntry, LedgerState
from apps.ledger.selectors import code_runs

from .latency_buckets import bucket_of, percentile
from .models import DailyLatencyRollup, InvocationRollup, LatencyRollup
from .rollups import day_ceil, day_floor, hour_ceil, hour_floor, made_by_code, rollup_coverage

# window → (length, bucket function of its calls-over-time chart)
WINDOWS: dict[str, tuple[timedelta, Any]] = {
    "1h": (timedelta(hours=1), TruncMinute),
    "1d": (timedelta(days=1), TruncHour),
    "7d": (timedelta(days=7), TruncHour),
    "30d": (timedelta(days=30), TruncDay),
}
UNKNOWN_AGE_BUCKETS = ("1h", "1h-1d", "1d-7d", "gt7d")
# Stacking order of the calls chart: good outcomes at the bottom, errors on top.
STATUS_ORDER = ("ok", "empty", "accepted", "pending_approval", "error")
TOP = 8


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
    # Code runs (run_python calls) started in the window, and the calls their code made
    # there (inner calls, also counted in calls_total).
    code_runs: int = 0
    inner_calls: int = 0
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
    """Every figure of the dashboard for one window ("1h", "1d", "7d" or "30d")."""
    now = now or timezone.now()
    length, bucket = WINDOWS[window]
    overview = Overview(window=window, since=now - length)
    calls = _window_calls(tenant_id, overview.since, now, hourly=bucket is not TruncMinute)
    _calls_over_time(overview, calls, bucket)
    overview.error_kinds = sorted(
        ((kind or "(none)", n) for (kind,), n in calls.summed(("kind",), Q(status="error")).items()),
        key=lambda kind_n: (-kind_n[1], kind_n[0]),
    )
    overview.latency = _latency_per_tool(calls)
    overview.code_runs = _of_tenant(code_runs().filter(created_at__gte=overview.since), tenant_id).count()
    by_code = calls.summed(("from_code",), raw_keys={"from_code": made_by_code()})
    overview.inner_calls = by_code.get((True,), 0)
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


@dataclass(frozen=True)
class WindowCalls:
    """The calls of a window: hourly rollups for the whole hours they cover, raw rows for
    the rest (the current hour, the window's first partial hour, anything not rolled up)."""

    raw: QuerySet  # Invocation
    rolled: QuerySet  # InvocationRollup
    rolled_latency: QuerySet  # LatencyRollup: the rolled-up hours outside whole days
    daily_latency: QuerySet  # DailyLatencyRollup: the whole days of the rolled-up hours

    def summed(self, keys: tuple[str, ...], condition: Q | None = None, *,
               raw_keys: dict[str, Any] | None = None, rolled_keys: dict[str, Any] | None = None,
               ) -> dict[tuple[Any, ...], int]:
        """Calls per `keys`, raw and rolled-up counts added; `raw_keys` / `rolled_keys` compute
        a key from each source's own columns."""
        condition = condition or Q()
        return _added(keys, (self.raw.filter(condition).annotate(**(raw_keys or {})), Count("id")),
                      (self.rolled.filter(condition).annotate(**(rolled_keys or {})), Sum("calls")))

    def latency_buckets(self) -> dict[str, list[tuple[int, int]]]:
        """(latency bucket, calls) pairs per tool name."""
        counts = _added(("tool_name", "bucket"), (self.raw.annotate(bucket=bucket_of()), Count("id")),
                        (self.rolled_latency, Sum("calls")), (self.daily_latency, Sum("calls")))
        buckets: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for (tool, bucket), n in counts.items():
            buckets[tool].append((bucket, n))
        return buckets


def _added(keys: tuple[str, ...], *sources: tuple[QuerySet, Any]) -> dict[tuple[Any, ...], int]:
    totals: dict[tuple[Any, ...], int] = defaultdict(int)
    for queryset, measure in sources:
        for row in queryset.values(*keys).annotate(n=measure):
            totals[tuple(row[key] for key in keys)] += row["n"]
    return totals


def _window_calls(tenant_id: int | None, since: datetime, now: datetime, *, hourly: bool) -> WindowCalls:
    raw = _of_tenant(Invocation.objects.filter(created_at__gte=since), tenant_id)
    rolled_hours = _rolled_hours(since, now) if hourly else None
    if rolled_hours is None:
        return WindowCalls(raw, InvocationRollup.objects.none(), LatencyRollup.objects.none(),
                           DailyLatencyRollup.objects.none())
    start, end = rolled_hours
    days_start, days_end = day_ceil(start), day_floor(end)
    if days_start >= days_end:
        days_start = days_end = end
    return WindowCalls(
        raw.filter(Q(created_at__lt=start) | Q(created_at__gte=end)),
        _of_tenant(InvocationRollup.objects.filter(hour__gte=start, hour__lt=end), tenant_id),
        _of_tenant(LatencyRollup.objects.filter(Q(hour__gte=start, hour__lt=days_start)
                                                | Q(hour__gte=days_end, hour__lt=end)), tenant_id),
        _of_tenant(DailyLatencyRollup.objects.filter(day__gte=days_start, day__lt=days_end), tenant_id),
    )


def _rolled_hours(since: datetime, now: datetime) -> tuple[datetime, datetime] | None:
    """The whole hours of the window that are rolled up, never the current one."""
    coverage = rollup_coverage()
    if coverage is None:
        return None
    start, end = max(hour_ceil(since), coverage[0]), min(hour_floor(now), coverage[1])
    return (start, end) if start < end else None


def _calls_over_time(overview: Overview, calls: WindowCalls, bucket: Any) -> None:
    counts = calls.summed(("bucket", "status"), raw_keys={"bucket": bucket("created_at")},
                          rolled_keys={"bucket": bucket("hour")})
    by_bucket: dict[datetime, dict[str, Any]] = {}
    statuses: set[str] = set()
    for (moment, status), n in counts.items():
        by_bucket.setdefault(moment, {"bucket": moment})[status] = n
        statuses.add(status)
        overview.calls_total += n
        if status == "error":
            overview.errors_total += n
    overview.calls_over_time = [by_bucket[b] for b in sorted(by_bucket)]
    overview.statuses = sorted(statuses, key=lambda s: (STATUS_ORDER.index(s) if s in STATUS_ORDER else 9, s))


def _latency_per_tool(calls: WindowCalls) -> list[ToolLatency]:
    """Calls, errors, p50 and p95 per tool that exists: a name no tool has (an unknown_tool
    call) is for the capability requests, not the latency chart. Percentiles come from the
    latency buckets of raw rows and rollups added up (apps/dashboards/latency_buckets.py)."""
    tool_names = Tool.objects.values("name")
    known = WindowCalls(
        calls.raw.filter(Q(version_number__isnull=False) | Q(tool_name__in=tool_names)),
        *(rows.filter(Q(has_version=True) | Q(tool_name__in=tool_names))
          for rows in (calls.rolled, calls.rolled_latency, calls.daily_latency)),
    )
    totals = known.summed(("tool_name",))
    errors = known.summed(("tool_name",), Q(status="error"))
    buckets = known.latency_buckets()
    latencies = [
        ToolLatency(tool, n, errors.get((tool,), 0),
                    percentile(buckets[tool], 0.5), percentile(buckets[tool], 0.95))
        for (tool,), n in totals.items()
    ]
    return sorted(latencies, key=lambda t: (-t.calls, t.tool))[:TOP * 2]


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
