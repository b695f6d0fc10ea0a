"""The partitioned logs at size: 10 million invocations over 30 days and 1 million audit events.

    DATABASE_URL=postgres://…/toolhub_parts_bench .venv/bin/python scripts/bench_logs.py \\
        [--invocations 10000000] [--audit 1000000] [--dashboards [--raw-dashboards]] \\
        [--writer] [--compare-periods] [--retention]

Fills a scratch PostgreSQL database (its name must contain "bench") server-side
(bench/log_fill.py), then times through Django's test client (a superuser and staff scoped
to one tenant, one warm-up, median of five) the invocation list, the audit list, their
filters and a page of each. With --dashboards it rolls the month up from scratch and once
as the scheduled job does, and times the 7- and 30-day dashboards over every tenant on the rollups (and on raw
rows with --raw-dashboards; bench/dashboard.py). With --writer it times the log's writer
into the partitioned table and a plain one. With --compare-periods it copies both logs
into tables partitioned the other way (invocations by week, audit events by day) and times
the SQL the changelists ran on both shapes (EXPLAIN ANALYZE: planning and execution). With
--retention, last, it times a retention run that drops the month of filled partitions
(destructive: the next run fills again). Prints Markdown for docs/performance.md. Never
part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings.base")
# The demo's payment tools call the server's own loopback port, which the seed must allow.
os.environ.setdefault("TOOLHUB_EGRESS_ALLOW", "127.0.0.1:*")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import Permission, User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

from apps.audit import partitioning  # noqa: E402
from apps.audit.models import Invocation  # noqa: E402
from apps.audit.partitions import LOGS, apply_retention, create_ahead  # noqa: E402
from apps.common.db import bulk_append  # noqa: E402
from apps.tenancy.models import Agent, StaffScope, Tenant  # noqa: E402
from bench.dashboard import PageTiming, raw_rows_only, time_dashboard, timed_loads, timed_rollup  # noqa: E402
from bench.log_fill import AUDIT_DAYS, FILL_AUDIT, FILL_INVOCATIONS, fill, run, say, seed  # noqa: E402

INVOCATIONS, AUDIT = LOGS
DAYS = 30

PAGES = [
    ("invocation log", "/admin/audit/invocation/"),
    ("invocations, errors of a kind", "/admin/audit/invocation/?status=error&kind=timeout"),
    ("invocations, one tool, 24 h", "/admin/audit/invocation/?tool_name=search_orders&age=1d"),
    ("invocations, one tenant", "/admin/audit/invocation/?tenant__id__exact={tenant_id}"),
    ("invocations, search a task id", "/admin/audit/invocation/?q=bench-4242"),
    ("invocation page", "/admin/audit/invocation/{invocation_id}/change/"),
    ("audit events", "/admin/audit/auditevent/"),
    ("audit events, one action", "/admin/audit/auditevent/?action=grant.create"),
    ("audit events, one target type", "/admin/audit/auditevent/?target_type=upstreams.Credential"),
    ("audit events, one tenant", "/admin/audit/auditevent/?tenant__id__exact={tenant_id}"),
    ("audit events, last 30 days", "/admin/audit/auditevent/?age=30d"),
    ("audit events, last month", "/admin/audit/auditevent/?month={last_month}"),
    ("audit events, search an actor", "/admin/audit/auditevent/?q=ops-7"),
    ("audit event page", "/admin/audit/auditevent/{event_id}/change/"),
]
SLOW_S = 5.0


def users() -> tuple[User, User]:
    root, _ = User.objects.get_or_create(
        username="bench-root", defaults={"is_staff": True, "is_superuser": True}
    )
    staff, _ = User.objects.get_or_create(username="bench-staff", defaults={"is_staff": True})
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="audit"))
    StaffScope.objects.update_or_create(user=staff, defaults={"tenant": Tenant.objects.get(slug="demo")})
    return root, staff


def time_pages() -> dict[str, list[str]]:
    """Print the pages' table; return the SQL each page ran against the logs (superuser)."""
    root, staff = users()
    tenant_id = Tenant.objects.get(slug="demo").pk
    invocation_id = run(
        "SELECT id FROM audit_invocation WHERE tenant_id = %s ORDER BY created_at DESC LIMIT 1", [tenant_id]
    )[0][0]
    event_id = run(
        "SELECT id FROM audit_auditevent WHERE tenant_id = %s ORDER BY at DESC LIMIT 1", [tenant_id]
    )[0][0]
    last_month = f"{(timezone.now().replace(day=1) - timedelta(days=1)):%Y-%m}"
    print("| page | superuser (ms) | tenant staff (ms) | queries |")
    print("|---|---:|---:|---:|")
    log_sql = {}
    for name, url in PAGES:
        url = url.format(
            tenant_id=tenant_id, invocation_id=invocation_id, event_id=event_id, last_month=last_month
        )
        timings = []
        for user in (root, staff):
            client = Client()
            client.force_login(user)
            timings.append(timed_loads(client, url, slow_s=SLOW_S))
        log_sql[name] = [
            sql for sql in timings[0][2] if re.search(r'FROM "audit_(invocation|auditevent)"', sql)
        ]
        print(f"| {name} | {timings[0][0]:.0f} | {timings[1][0]:.0f} | {timings[0][1]} |")
    return log_sql


def time_dashboards(root: User, *, raw: bool) -> None:
    """The 7- and 30-day dashboards over every tenant on rollups, after rolling the month up
    from scratch and once as the scheduled job does; with `raw`, also on raw rows (one load
    after the warm-up: each takes seconds at this size)."""
    month, month_s = timed_rollup(from_scratch=True)
    scheduled, scheduled_s = timed_rollup(from_scratch=False)
    windows = ("7d", "30d")
    rolled = [time_dashboard(root, window) for window in windows]
    raws: list[PageTiming | None] = [None] * len(windows)
    if raw:
        with raw_rows_only():
            raws = [time_dashboard(root, window, runs=1) for window in windows]
    print(
        f"\nrolled up the month ({month.start:%Y-%m-%d %H:00} to {month.end:%Y-%m-%d %H:00}) in "
        f"{month_s:.1f} s: {month.invocation_rows:,} call rows, {month.latency_rows:,} hourly latency rows"
    )
    print(
        f"a scheduled run ({scheduled.start:%H:00} to {scheduled.end:%H:00}) in {scheduled_s * 1000:.0f} ms: "
        f"{scheduled.invocation_rows:,} call rows, {scheduled.latency_rows:,} latency rows"
    )
    print("\n| dashboard, every tenant (superuser) | rollups (ms) | raw rows (ms) | queries rollups / raw |")
    print("|---|---:|---:|---:|")
    for after, before in zip(rolled, raws, strict=True):
        raw_ms, raw_queries = (f"{before.median_ms:,.0f}", before.queries) if before else ("–", "–")
        print(f"| {after.window} | {after.median_ms:.0f} | {raw_ms} | {after.queries} / {raw_queries} |")


def copy_partitioned_by(table: str, column: str, period_days: int, days_back: int) -> str:
    """A copy of `table`, partitioned by `period_days` instead, with the same rows and indexes."""
    other = f"bench_{table}_by_{period_days}d"
    if partitioning.table_exists(connection.cursor(), other):
        return other
    started = time.perf_counter()
    run(
        f'CREATE TABLE "{other}" (LIKE "{table}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS) '
        f'PARTITION BY RANGE ("{column}")'
    )
    run(f'CREATE TABLE "{other}_default" PARTITION OF "{other}" DEFAULT')
    today = run("SELECT (now() AT TIME ZONE 'UTC')::date")[0][0]
    starts = sorted(
        {partitioning.period_start(today - timedelta(days=n), period_days) for n in range(-7, days_back + 1)}
    )
    with connection.cursor() as cursor:
        for start in starts:
            partitioning.create_partition(cursor, other, period_days, start)
    run(f'INSERT INTO "{other}" SELECT * FROM "{table}"')
    run(f'ALTER TABLE "{other}" ADD PRIMARY KEY (id, "{column}")')
    for (definition,) in run(
        "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = %s::regclass AND NOT indisprimary",
        [table],
    ):
        run(re.sub(r"INDEX (\S+) ON (ONLY )?\S+", f'INDEX \\1_{period_days}d ON "{other}"', definition))
    run(f'VACUUM ANALYZE "{other}"')
    say(f"{other}: copied and indexed in {time.perf_counter() - started:.0f} s")
    return other


def explain_ms(sql: str) -> tuple[float, float]:
    """Median planning and execution ms of five EXPLAIN ANALYZE runs after a warm-up."""
    plans = [run(f"EXPLAIN (ANALYZE, SUMMARY) {sql}") for _ in range(6)][1:]

    def figure(plan: list[tuple], label: str) -> float:
        return next(float(line[0].split(": ")[1].split()[0]) for line in plan if line[0].startswith(label))

    return (
        statistics.median(figure(p, "Planning Time") for p in plans),
        statistics.median(figure(p, "Execution Time") for p in plans),
    )


def compare_periods(log_sql: dict[str, list[str]]) -> None:
    other_shape = {
        "audit_invocation": copy_partitioned_by("audit_invocation", "created_at", 7, 31),
        "audit_auditevent": copy_partitioned_by("audit_auditevent", "at", 1, 401),
    }
    print("\n| query of the page | as partitioned: plan + run (ms) | the other period: plan + run (ms) |")
    print("|---|---:|---:|")
    for name, statements in log_sql.items():
        for n, sql in enumerate(statements):
            table = "audit_invocation" if '"audit_invocation"' in sql else "audit_auditevent"
            other = other_shape[table]
            here = explain_ms(sql)
            there = explain_ms(sql.replace(f'"{table}"', f'"{other}"'))
            figures = f"{here[0]:.1f} + {here[1]:.1f} | {there[0]:.1f} + {there[1]:.1f}"
            print(f"| {name} #{n + 1} ({table}) | {figures} |")


def time_retention() -> None:
    partitions_before = len(partitioning.partitions_of(connection.cursor(), "audit_invocation"))
    settings.TOOLHUB_INVOCATION_LOG_RETENTION_DAYS = 0
    started = time.perf_counter()
    report = apply_retention()[0]
    elapsed = time.perf_counter() - started
    print(
        f"\nretention run: dropped {len(report.dropped)} of {partitions_before} invocation partitions "
        f"({report.cutoff:%Y-%m-%d} and before) in {elapsed:.2f} s"
    )
    weekly = "bench_audit_invocation_by_7d"
    if partitioning.table_exists(connection.cursor(), weekly):
        past = [
            p
            for p in partitioning.partitions_of(connection.cursor(), weekly)
            if p.end and p.end <= report.cutoff
        ]
        started = time.perf_counter()
        for partition in past:
            with connection.cursor() as cursor:
                partitioning.drop_partition(cursor, weekly, partition.name)
        print(f"by week instead: dropped {len(past)} partitions in {time.perf_counter() - started:.2f} s")


def time_log_writer(rounds: int = 5, batches: int = 20) -> None:
    """The invocation log's writer (bulk_append: a COPY per batch of 500 rows) into the
    partitioned table and into a plain table with the same columns and indexes, in turns."""
    run("DROP TABLE IF EXISTS bench_invocation_plain")
    run("CREATE TABLE bench_invocation_plain (LIKE audit_invocation INCLUDING ALL)")
    agent = Agent.objects.select_related("tenant").first()
    envelope = {"status": "ok", "data": [{"order_id": "ORD-000001", "total": "12.50"}] * 3}
    samples: dict[str, list[float]] = {"audit_invocation": [], "bench_invocation_plain": []}
    meta = Invocation._meta
    try:
        for round_ in range(rounds):
            for table, timings in samples.items():
                # bulk_append writes to the model's table: point it at each shape in turn.
                meta.db_table = table
                for n in range(batches):
                    rows = [
                        Invocation(
                            tenant=agent.tenant,
                            agent=agent,
                            task_id=f"w{round_}-{n}",
                            call_id=f"c{i}",
                            tool_name="search_orders",
                            status="ok",
                            latency_ms=3.0,
                            envelope=envelope,
                        )
                        for i in range(500)
                    ]
                    started = time.perf_counter()
                    bulk_append(rows)
                    timings.append((time.perf_counter() - started) * 1000)
    finally:
        meta.db_table = "audit_invocation"
    print(f"\nthe log writer, a COPY of 500 rows ({rounds} turns of {batches} batches each, median):")
    for table, timings in samples.items():
        print(
            f"  into {table}: {statistics.median(timings):.1f} ms per batch, "
            f"{statistics.median(timings) / 500 * 1000:.0f} µs per row"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--invocations", type=int, default=10_000_000)
    parser.add_argument("--audit", type=int, default=1_000_000)
    parser.add_argument("--dashboards", action="store_true", help="roll the log up, time the dashboards")
    parser.add_argument("--raw-dashboards", action="store_true", help="with --dashboards: on raw rows too")
    parser.add_argument("--compare-periods", action="store_true")
    parser.add_argument("--retention", action="store_true")
    parser.add_argument("--writer", action="store_true", help="time the log writer: partitioned vs plain")
    args = parser.parse_args()
    name = connection.settings_dict["NAME"]
    if connection.vendor != "postgresql" or "bench" not in name:
        sys.exit(
            "Set DATABASE_URL to a scratch PostgreSQL database whose name contains 'bench': this fills it."
        )
    targets = seed()
    create_ahead(back_days=DAYS + 1, logs=[INVOCATIONS])
    create_ahead(back_days=AUDIT_DAYS + 1, logs=[AUDIT])
    fill("audit_invocation", FILL_INVOCATIONS, rows=args.invocations, days=DAYS, targets=targets)
    fill("audit_auditevent", FILL_AUDIT, rows=args.audit, days=AUDIT_DAYS, targets=targets)
    log_sql = time_pages()
    if args.dashboards:
        time_dashboards(users()[0], raw=args.raw_dashboards)
    if args.writer:
        time_log_writer()
    if args.compare_periods:
        compare_periods(log_sql)
    if args.retention:
        time_retention()


if __name__ == "__main__":
    main()
