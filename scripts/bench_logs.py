"""The partitioned logs at size: 10 million invocations over 30 days and 1 million audit events.

    DATABASE_URL=postgres://…/toolhub_parts_bench .venv/bin/python scripts/bench_logs.py \\
        [--invocations 10000000] [--audit 1000000] [--compare-periods] [--retention]

Fills a scratch PostgreSQL database (its name must contain "bench") with generate_series,
server-side, with the tables' indexes and foreign keys dropped during the fill and rebuilt
after; then times through Django's test client (a superuser and staff scoped to one tenant,
one warm-up, median of five) the invocation list, its filters and the audit list. With
--compare-periods it copies both logs into tables partitioned the other way (invocations by
week, audit events by day) and times the SQL the changelists ran on both shapes (EXPLAIN
ANALYZE: planning and execution). With --retention, last, it times a retention run that
drops the month of filled partitions (destructive: the next run fills again). Prints
Markdown for docs/performance.md. Never part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from apps.audit import partitioning  # noqa: E402
from apps.audit.models import Invocation  # noqa: E402
from apps.audit.partitions import LOGS, apply_retention, create_ahead  # noqa: E402
from apps.catalog.models import ToolVersion  # noqa: E402
from apps.common.db import bulk_append  # noqa: E402
from apps.tenancy.models import Agent, StaffScope, Tenant  # noqa: E402

INVOCATIONS, AUDIT = LOGS
CHUNK = 1_000_000

FILL_INVOCATIONS = """
INSERT INTO audit_invocation (tenant_id, agent_id, task_id, call_id, tool_name, version_number, status, kind,
    latency_ms, args_chars, result_chars, execution_id, dry_run, envelope, created_at)
SELECT t.tenant_id, t.agent_id, 'bench-' || (g / 4), 'call_' || (g %% 4), t.tool, 1,
    CASE WHEN g %% 10 = 0 THEN 'error' WHEN g %% 10 = 1 THEN 'empty' ELSE 'ok' END,
    CASE WHEN g %% 10 = 0 THEN (ARRAY['invalid_args','timeout','forbidden','business_rule'])[1 + g %% 4]
         ELSE '' END,
    5 + random() * 200, 60, 400, NULL, false, '{"status": "ok", "data": [1, 2, 3]}'::jsonb,
    now() - random() * interval '30 days'
FROM generate_series(%(first)s, %(last)s) AS g
JOIN bench_targets AS t ON t.n = g %% %(targets)s
"""

FILL_AUDIT = """
INSERT INTO audit_auditevent (tenant_id, actor, action, target_type, target_id, note, data, at)
SELECT t.tenant_id, 'ops-' || (g %% 20),
    (ARRAY['tool.publish','tool.draft','grant.create','policy.update','key.issue'])[1 + g %% 5],
    'catalog.ToolVersion', (g %% 5000)::text, '', '{"bench": true}'::jsonb,
    now() - random() * interval '400 days'
FROM generate_series(%(first)s, %(last)s) AS g
JOIN bench_targets AS t ON t.n = g %% %(targets)s
"""

PAGES = [
    ("invocation log", "/admin/audit/invocation/"),
    ("invocations, errors of a kind", "/admin/audit/invocation/?status=error&kind=timeout"),
    ("invocations, one tool, 24 h", "/admin/audit/invocation/?tool_name=search_orders&age=1d"),
    ("invocations, one tenant", "/admin/audit/invocation/?tenant__id__exact={tenant_id}"),
    ("invocations, search a task id", "/admin/audit/invocation/?q=bench-4242"),
    ("invocation page", "/admin/audit/invocation/{invocation_id}/change/"),
    ("audit events", "/admin/audit/auditevent/"),
]
SLOW_S = 5.0


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(sql: str, params: dict | list | None = None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def seed() -> int:
    """The demo, two more tenants with an agent each; the fill's targets. Returns their count."""
    call_command("migrate", verbosity=0)
    call_command("seed_demo", stdout=open(os.devnull, "w"))
    for slug in ("acme", "globex"):
        tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": slug.title()})
        Agent.objects.get_or_create(tenant=tenant, name=f"{slug}-bot")
    targets = [
        (agent.tenant_id, agent.pk, version.tool.name)
        for agent in Agent.objects.all()
        for version in ToolVersion.objects.filter(status="published").select_related("tool")
    ]
    run("DROP TABLE IF EXISTS bench_targets")
    run("CREATE TABLE bench_targets (n int, tenant_id bigint, agent_id bigint, tool text)")
    for n, target in enumerate(targets):
        run("INSERT INTO bench_targets VALUES (%s, %s, %s, %s)", [n, *target])
    return len(targets)


@contextmanager
def without_indexes(table: str) -> Iterator[None]:
    """Drop the table's indexes and foreign keys for a bulk fill; rebuild them after."""
    indexes = run(
        "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index "
        "WHERE indrelid = %s::regclass AND NOT indisprimary",
        [table],
    )
    foreign_keys = run(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass "
        "AND contype = 'f'",
        [table],
    )
    for name, _ in foreign_keys:
        run(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        run(f"DROP INDEX {name}")
    yield
    started = time.perf_counter()
    for _, definition in indexes:
        run(definition.replace(" ON ONLY ", " ON "))  # ONLY: the partitioned table's index alone
    for name, definition in foreign_keys:
        run(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}')
    say(
        f"  {table}: {len(indexes)} indexes and {len(foreign_keys)} foreign keys rebuilt in "
        f"{time.perf_counter() - started:.0f} s"
    )


def fill(table: str, sql: str, rows: int, targets: int) -> None:
    if run(f"SELECT count(*) FROM {table}")[0][0] >= rows:
        say(f"{table} already holds {rows:,} rows")
        return
    run(f"TRUNCATE {table}")
    started = time.perf_counter()
    with without_indexes(table):
        for first in range(1, rows + 1, CHUNK):
            run(sql, {"first": first, "last": min(first + CHUNK - 1, rows), "targets": targets})
            done = min(first + CHUNK - 1, rows)
            say(f"  {table}: {done:,} rows after {time.perf_counter() - started:.0f} s")
    run(f"VACUUM ANALYZE {table}")
    say(f"{table}: {rows:,} rows filled, indexed and analyzed in {time.perf_counter() - started:.0f} s")


def users() -> tuple[User, User]:
    root, _ = User.objects.get_or_create(
        username="bench-root", defaults={"is_staff": True, "is_superuser": True}
    )
    staff, _ = User.objects.get_or_create(username="bench-staff", defaults={"is_staff": True})
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="audit"))
    StaffScope.objects.update_or_create(user=staff, defaults={"tenant": Tenant.objects.get(slug="demo")})
    return root, staff


def timed(client: Client, url: str) -> tuple[float, int, list[str]]:
    """Median ms of five loads after a warm-up (one load only when slow), queries, their SQL."""
    started = time.perf_counter()
    assert client.get(url).status_code == 200, url
    if time.perf_counter() - started > SLOW_S:
        return (time.perf_counter() - started) * 1000, 0, []
    samples = []
    for _ in range(5):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, url
    return statistics.median(samples), len(queries), [q["sql"] for q in queries.captured_queries]


def time_pages() -> dict[str, list[str]]:
    """Print the pages' table; return the SQL each page ran against the logs (superuser)."""
    root, staff = users()
    tenant_id = Tenant.objects.get(slug="demo").pk
    invocation_id = run(
        "SELECT id FROM audit_invocation WHERE tenant_id = %s ORDER BY created_at DESC LIMIT 1", [tenant_id]
    )[0][0]
    print("| page | superuser (ms) | tenant staff (ms) | queries |")
    print("|---|---:|---:|---:|")
    log_sql = {}
    for name, url in PAGES:
        url = url.format(tenant_id=tenant_id, invocation_id=invocation_id)
        timings = []
        for user in (root, staff):
            client = Client()
            client.force_login(user)
            timings.append(timed(client, url))
        log_sql[name] = [
            sql for sql in timings[0][2] if re.search(r'FROM "audit_(invocation|auditevent)"', sql)
        ]
        print(f"| {name} | {timings[0][0]:.0f} | {timings[1][0]:.0f} | {timings[0][1]} |")
    return log_sql


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
    create_ahead(back_days=31, logs=[INVOCATIONS])
    create_ahead(back_days=401, logs=[AUDIT])
    fill("audit_invocation", FILL_INVOCATIONS, args.invocations, targets)
    fill("audit_auditevent", FILL_AUDIT, args.audit, targets)
    log_sql = time_pages()
    if args.writer:
        time_log_writer()
    if args.compare_periods:
        compare_periods(log_sql)
    if args.retention:
        time_retention()


if __name__ == "__main__":
    main()
