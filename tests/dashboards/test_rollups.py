"""Hourly rollups of the invocation log: the same figures as raw rows, rerun-safe, late rows
picked up, the current hour never rolled up."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import Sum
from django.db.models.functions import TruncDay

from apps.audit.models import Invocation
from apps.dashboards.latency_buckets import RELATIVE_ERROR
from apps.dashboards.models import DailyLatencyRollup, InvocationRollup, LatencyRollup, RollupCoverage
from apps.dashboards.rollups import (
    day_ceil,
    day_floor,
    hour_ceil,
    hour_floor,
    roll_up_invocations,
    rollup_coverage,
)
from apps.dashboards.selectors import WINDOWS, dashboard_overview
from apps.dashboards.tasks import rollup_invocations_task

pytestmark = pytest.mark.django_db


def figures(overview):
    return {
        "totals": (overview.calls_total, overview.errors_total),
        "over_time": overview.calls_over_time,
        "error_kinds": overview.error_kinds,
        "latency": [(t.tool, t.calls, t.errors, t.p50_ms, t.p95_ms) for t in overview.latency],
    }


def exact_percentiles(tenant_id, since):
    """PostgreSQL's own PERCENTILE_CONT over the raw rows: the figures before rollups."""
    scope = "" if tenant_id is None else "AND tenant_id = %s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT tool_name, PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY latency_ms),
                       PERCENTILE_CONT(0.95) WITHIN GROUP (ORDER BY latency_ms)
                FROM audit_invocation WHERE created_at >= %s AND version_number IS NOT NULL {scope}
                GROUP BY tool_name""",
            [since] + ([] if tenant_id is None else [tenant_id]))
        return {tool: (p50, p95) for tool, p50, p95 in cursor.fetchall()}


@pytest.mark.parametrize("window", ["1d", "7d", "30d"])
@pytest.mark.parametrize("scoped", [False, True])
def test_rollups_give_the_raw_figures_of_every_window(log, window, scoped):
    tenant_id = log.tenants[1].pk if scoped else None
    since = log.now - WINDOWS[window][0]
    # The window's first hour is partial: its calls in the window count, those before do not.
    log.add(tenant=1, tool="globex_search", at=since + timedelta(seconds=1), status="error", kind="first")
    log.add(tenant=1, tool="globex_search", at=since - timedelta(seconds=1), status="error", kind="before")
    before = figures(dashboard_overview(tenant_id=tenant_id, window=window, now=log.now))
    exact = exact_percentiles(tenant_id, since)
    assert before["totals"][0] > 0 and len(exact) == (2 if scoped else 4)

    roll_up_invocations(now=log.now)
    # Only rollups can give the figures now for the whole hours they cover.
    Invocation.objects.filter(created_at__gte=hour_ceil(since), created_at__lt=rollup_coverage()[1]).delete()
    after = figures(dashboard_overview(tenant_id=tenant_id, window=window, now=log.now))

    assert after == before
    # The longer windows read whole days from the daily latency rows.
    assert window == "1d" or DailyLatencyRollup.objects.exists()
    assert ("first", 1) in after["error_kinds"] and "before" not in dict(after["error_kinds"])
    assert {tool for tool, *_ in after["latency"]} == set(exact)
    for tool, _, _, p50, p95 in after["latency"]:
        assert p50 == pytest.approx(exact[tool][0], rel=RELATIVE_ERROR, abs=0.04)
        assert p95 == pytest.approx(exact[tool][1], rel=RELATIVE_ERROR, abs=0.04)


def daily_matches_hourly() -> bool:
    """Every whole day of the coverage has daily latency rows adding up its hours', and no
    other day has any."""
    start, end = rollup_coverage()
    hourly = LatencyRollup.objects.filter(hour__gte=day_ceil(start), hour__lt=day_floor(end)).annotate(
        day=TruncDay("hour", tzinfo=UTC),
    ).values_list("day", "tenant_id", "tool_name", "has_version", "bucket")
    expected = {row[:-1]: row[-1] for row in hourly.annotate(n=Sum("calls"))}
    daily = {row[:-1]: row[-1] for row in DailyLatencyRollup.objects.values_list(
        "day", "tenant_id", "tool_name", "has_version", "bucket", "calls")}
    return bool(expected) and daily == expected


def rollup_rows():
    return (sorted(InvocationRollup.objects.values_list("hour", "tenant_id", "tool_name", "has_version",
                                                        "status", "kind", "calls")),
            sorted(LatencyRollup.objects.values_list("hour", "tenant_id", "tool_name", "has_version",
                                                     "bucket", "calls")))


def test_rolling_an_hour_up_again_gives_the_same_rows(log):
    roll_up_invocations(now=log.now)
    first = rollup_rows()

    call_command("rollup_invocations", "--since", "45d")

    assert rollup_rows() == first
    assert daily_matches_hourly()
    assert sum(calls for *_, calls in first[0]) == Invocation.objects.filter(
        created_at__lt=hour_floor(log.now)).count()


def test_the_current_hour_is_never_rolled_up_and_the_page_counts_it_raw(log):
    log.add(tenant=0, tool="acme_search", at=log.now - timedelta(seconds=1))
    roll_up_invocations(now=log.now)

    assert rollup_coverage()[1] == hour_floor(log.now)
    assert not InvocationRollup.objects.filter(hour__gte=hour_floor(log.now)).exists()
    raw_now = Invocation.objects.filter(created_at__gte=hour_floor(log.now), tenant=log.tenants[0]).count()
    overview = dashboard_overview(tenant_id=log.tenants[0].pk, window="1d", now=log.now)
    assert overview.calls_over_time[-1]["bucket"] == hour_floor(log.now)
    assert sum(n for key, n in overview.calls_over_time[-1].items() if key != "bucket") == raw_now


def test_the_beat_job_picks_up_late_rows_of_recent_hours_and_a_backfill_older_ones(log, settings):
    settings.TOOLHUB_ROLLUP_REROLL_HOURS = 2
    rollup_invocations_task()
    end = rollup_coverage()[1]
    late_hour, old_hour = end - timedelta(hours=2), end - timedelta(hours=5)
    log.add(tenant=0, tool="acme_search", at=late_hour + timedelta(minutes=5), status="error", kind="late")
    log.add(tenant=0, tool="acme_search", at=old_hour + timedelta(minutes=5), status="error", kind="late")

    rollup_invocations_task()
    assert list(InvocationRollup.objects.filter(kind="late").values_list("hour", flat=True)) == [late_hour]
    assert daily_matches_hourly()

    call_command("rollup_invocations", "--since", (old_hour + timedelta(minutes=30)).isoformat())
    assert sorted(InvocationRollup.objects.filter(kind="late").values_list("hour", flat=True)) == [
        old_hour, late_hour]
    assert daily_matches_hourly()


def test_a_backfill_past_the_coverage_grows_it_once_the_ranges_touch(log):
    roll_up_invocations(since=log.now - timedelta(days=2), now=log.now)
    assert rollup_coverage() == (hour_floor(log.now - timedelta(days=2)), hour_floor(log.now))

    roll_up_invocations(since=log.now - timedelta(days=20), now=log.now)

    assert rollup_coverage() == (hour_floor(log.now - timedelta(days=20)), hour_floor(log.now))
    assert daily_matches_hourly()


def test_the_command_refuses_a_since_it_cannot_read():
    with pytest.raises(CommandError, match="neither an ISO date"):
        call_command("rollup_invocations", "--since", "last tuesday")
    with pytest.raises(CommandError, match="not a date that exists"):
        call_command("rollup_invocations", "--since", "2026-02-30")
    assert not RollupCoverage.objects.exists()  # nothing was rolled up


def test_the_beat_job_drops_rollups_past_their_retention_and_the_coverage_starts_there(log, settings):
    # given: the 40 days of log rolled up, and rollups kept for 20 days
    rollup_invocations_task()
    settings.TOOLHUB_ROLLUP_RETENTION_DAYS = 20
    cutoff = day_floor(log.now - timedelta(days=20))
    kept_before = InvocationRollup.objects.filter(hour__gte=cutoff).aggregate(calls=Sum("calls"))["calls"]
    assert InvocationRollup.objects.filter(hour__lt=cutoff).exists()

    # when: the next scheduled run
    rollup_invocations_task()

    # then: only the days past retention went, and the dashboard never reads rollups it lost
    assert not InvocationRollup.objects.filter(hour__lt=cutoff).exists()
    assert not LatencyRollup.objects.filter(hour__lt=cutoff).exists()
    assert not DailyLatencyRollup.objects.filter(day__lt=cutoff).exists()
    kept_after = InvocationRollup.objects.filter(hour__gte=cutoff).aggregate(calls=Sum("calls"))["calls"]
    assert kept_after == kept_before
    assert rollup_coverage()[0] == cutoff
    assert daily_matches_hourly()
