"""Roll the invocation log up into hourly rows: calls per tenant, tool, outcome and hour, and
latency bucket counts per tenant, tool and hour.

Idempotent: rolling an hour up deletes its rollup rows and writes them again from the raw
rows, in one transaction, so a rerun gives the same rows. Late rows: every scheduled run
rolls up again the last TOOLHUB_ROLLUP_REROLL_HOURS complete hours besides the new ones (a
log row is written within a second of its `created_at`: apps/audit/invocation_log.py);
rows older than that, loaded by hand, need `manage.py rollup_invocations --since`.

Latency counts are also added up per UTC day (DailyLatencyRollup) for the days whose every
hour is rolled up, in the transaction that rolls up any of their hours.

Rollups outlive the raw rows they came from (30 days by default) but not forever:
TOOLHUB_ROLLUP_RETENTION_DAYS of them are kept (drop_expired_rollups, after each scheduled
run), and the coverage then starts where they do.

RollupCoverage records the hours [start, end) whose rollups are complete. A run works from
its start hour to the current hour (never into it), a day per transaction, and the
coverage grows with each as long as the two ranges touch, so the dashboard never reads a
rollup of an hour that is not fully rolled up.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import BooleanField, Count, ExpressionWrapper, Min, Q, QuerySet, Sum
from django.db.models.functions import TruncDay, TruncHour
from django.utils import timezone

from apps.audit.models import Invocation

from .latency_buckets import bucket_of
from .models import DailyLatencyRollup, InvocationRollup, LatencyRollup, RollupCoverage

logger = logging.getLogger("toolhub.rollups")

COVERAGE = "invocations"
_CHUNK = timedelta(days=1)
_BATCH = 2000


@dataclass(frozen=True)
class RollupReport:
    start: datetime
    end: datetime
    invocation_rows: int
    latency_rows: int


def hour_floor(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def hour_ceil(moment: datetime) -> datetime:
    floor = hour_floor(moment)
    return floor if floor == moment else floor + timedelta(hours=1)


def day_floor(moment: datetime) -> datetime:
    return hour_floor(moment).replace(hour=0)


def day_ceil(moment: datetime) -> datetime:
    floor = day_floor(moment)
    return floor if floor == moment else floor + timedelta(days=1)


def rollup_coverage() -> tuple[datetime, datetime] | None:
    coverage = RollupCoverage.objects.filter(name=COVERAGE).first()
    return None if coverage is None else (coverage.start, coverage.end)


def roll_up_invocations(*, since: datetime | None = None, now: datetime | None = None) -> RollupReport:
    """Roll up every complete hour from `since` (default: the scheduled run's start) to the
    current hour."""
    end = hour_floor(now or timezone.now())
    start = min(hour_floor(since) if since is not None else _scheduled_start(end), end)
    covered = rollup_coverage()
    if covered is not None and start > covered[1]:
        start = covered[1]  # roll the gap too: the coverage stays one range
    invocation_rows = latency_rows = 0
    chunk_start = start
    while chunk_start < end:
        chunk_end = min(chunk_start + _CHUNK, end)
        with transaction.atomic():
            locked = _locked_coverage()
            written = _roll_up_range(chunk_start, chunk_end)
            invocation_rows += written[0]
            latency_rows += written[1]
            covered = _extend_coverage(locked, start, chunk_end) or (start, chunk_end)
            _roll_up_days(chunk_start, chunk_end, within=covered)
        chunk_start = chunk_end
    if start >= end:
        with transaction.atomic():
            _extend_coverage(_locked_coverage(), start, end)
    report = RollupReport(start, end, invocation_rows, latency_rows)
    logger.info("rolled up the invocation log from %s to %s: %d call rows, %d latency rows",
                start.isoformat(), end.isoformat(), invocation_rows, latency_rows)
    return report


def drop_expired_rollups(*, now: datetime | None = None) -> int:
    """Delete the rollup rows of the days past TOOLHUB_ROLLUP_RETENTION_DAYS; how many went.
    Each table's unique index leads with its hour or day, so this reads only what it drops."""
    cutoff = day_floor((now or timezone.now()) - timedelta(days=settings.TOOLHUB_ROLLUP_RETENTION_DAYS))
    with transaction.atomic():
        coverage = _locked_coverage()
        dropped = sum(
            rows.delete()[0]
            for rows in (
                InvocationRollup.objects.filter(hour__lt=cutoff),
                LatencyRollup.objects.filter(hour__lt=cutoff),
                DailyLatencyRollup.objects.filter(day__lt=cutoff),
            )
        )
        if coverage is not None and coverage.start < cutoff:
            coverage.start = min(cutoff, coverage.end)
            coverage.save()
    if dropped:
        logger.info("dropped %d rollup rows from before %s", dropped, cutoff.isoformat())
    return dropped


def _scheduled_start(end: datetime) -> datetime:
    coverage = rollup_coverage()
    if coverage is not None:
        return coverage[1] - timedelta(hours=settings.TOOLHUB_ROLLUP_REROLL_HOURS)
    oldest = Invocation.objects.aggregate(oldest=Min("created_at"))["oldest"]
    return end if oldest is None else hour_floor(oldest)


def _locked_coverage() -> RollupCoverage | None:
    """The coverage row, locked until the transaction ends: two runs take turns."""
    return RollupCoverage.objects.select_for_update().filter(name=COVERAGE).first()


def _extend_coverage(coverage: RollupCoverage | None, start: datetime,
                     end: datetime) -> tuple[datetime, datetime] | None:
    """Add [start, end) to the coverage when the two touch; the coverage it is part of now."""
    if coverage is None:
        coverage = RollupCoverage.objects.create(name=COVERAGE, start=start, end=end)
    elif end >= coverage.start:  # the run's range touches the coverage: one range again
        coverage.start, coverage.end = min(coverage.start, start), max(coverage.end, end)
        coverage.save()
    else:
        return None
    return coverage.start, coverage.end


def _roll_up_days(start: datetime, end: datetime, *, within: tuple[datetime, datetime]) -> None:
    """Daily latency rows, again from the hourly ones, for each day the hours [start, end)
    touch whose every hour is rolled up (`within`)."""
    first, stop = max(day_floor(start), day_ceil(within[0])), min(day_ceil(end), day_floor(within[1]))
    if first >= stop:
        return
    DailyLatencyRollup.objects.filter(day__gte=first, day__lt=stop).delete()
    days = LatencyRollup.objects.filter(hour__gte=first, hour__lt=stop).annotate(
        day=TruncDay("hour", tzinfo=UTC)).values("day", "tenant_id", "tool_name", "has_version", "bucket")
    DailyLatencyRollup.objects.bulk_create(
        [DailyLatencyRollup(day=r["day"], tenant_id=r["tenant_id"], tool_name=r["tool_name"],
                            has_version=r["has_version"], bucket=r["bucket"], calls=r["n"])
         for r in days.annotate(n=Sum("calls"))],
        batch_size=_BATCH,
    )


def _roll_up_range(start: datetime, end: datetime) -> tuple[int, int]:
    InvocationRollup.objects.filter(hour__gte=start, hour__lt=end).delete()
    LatencyRollup.objects.filter(hour__gte=start, hour__lt=end).delete()
    rows = _by_hour(Invocation.objects.filter(created_at__gte=start, created_at__lt=end))
    outcomes = rows.annotate(from_code=made_by_code()).values(
        "hour", "tenant_id", "tool_name", "has_version", "status", "kind", "from_code",
    ).annotate(n=Count("id"))
    written_outcomes = InvocationRollup.objects.bulk_create(
        [InvocationRollup(hour=r["hour"], tenant_id=r["tenant_id"], tool_name=r["tool_name"],
                          has_version=r["has_version"], status=r["status"], kind=r["kind"],
                          from_code=r["from_code"], calls=r["n"])
         for r in outcomes],
        batch_size=_BATCH,
    )
    latencies = rows.annotate(bucket=bucket_of()).values(
        "hour", "tenant_id", "tool_name", "has_version", "bucket").annotate(n=Count("id"))
    written_latencies = LatencyRollup.objects.bulk_create(
        [LatencyRollup(hour=r["hour"], tenant_id=r["tenant_id"], tool_name=r["tool_name"],
                       has_version=r["has_version"], bucket=r["bucket"], calls=r["n"])
         for r in latencies],
        batch_size=_BATCH,
    )
    return len(written_outcomes), len(written_latencies)


def made_by_code() -> ExpressionWrapper:
    """An invocation row's call was made by a code run's code (InvocationRollup.from_code)."""
    return ExpressionWrapper(Q(parent_execution_id__isnull=False), output_field=BooleanField())


def _by_hour(invocations: QuerySet) -> QuerySet:
    return invocations.annotate(
        hour=TruncHour("created_at", tzinfo=UTC),
        has_version=ExpressionWrapper(Q(version_number__isnull=False), output_field=BooleanField()),
    )
