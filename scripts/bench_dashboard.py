"""How fast the dashboard's 7- and 30-day windows over every tenant are on raw rows and on
hourly rollups, and how long rolling a month up takes.

    createdb toolhub_dashboard_bench   # a scratch database: the script fills it
    DATABASE_URL=postgres://…/toolhub_dashboard_bench .venv/bin/python scripts/bench_dashboard.py \
        [--rows 1000000] [--days 30]

Fills the invocation log with generate_series (3 tenants, 8 tools each, 10 % errors,
log-uniform latencies from 2 to 300 ms, spread over --days), ANALYZEs, times the dashboard
without rollups, rolls the log up, and times it again (bench/dashboard.py). Prints a
Markdown table for docs/performance.md. Never part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings.base")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from apps.catalog.models import Tool  # noqa: E402
from apps.dashboards.rollups import roll_up_invocations  # noqa: E402
from apps.tenancy.models import Agent, Tenant  # noqa: E402
from bench.dashboard import raw_rows_only, time_dashboard  # noqa: E402

FILL = """
INSERT INTO audit_invocation (tenant_id, agent_id, task_id, call_id, tool_name, version_number, status, kind,
    latency_ms, args_chars, result_chars, execution_id, dry_run, envelope, created_at)
SELECT t.tenant_id, t.agent_id, 'bench-' || (g / 4), 'call_' || (g % 4), t.tool, 1,
    CASE WHEN g % 10 = 0 THEN 'error' WHEN g % 10 = 1 THEN 'empty' ELSE 'ok' END,
    CASE WHEN g % 10 = 0 THEN (ARRAY['invalid_args','timeout','forbidden','business_rule'])[1 + g % 4]
         ELSE '' END,
    2 * exp(random() * 5), 60, 400, NULL, false, '{"status": "ok"}'::jsonb,
    now() - (random() * DAYS * interval '1 day')
FROM generate_series(1, ROWS) AS g
JOIN bench_targets AS t ON t.n = g % TARGETS
"""


def fill(rows: int, days: int) -> None:
    call_command("migrate", verbosity=0)
    targets = []
    for slug in ("acme", "globex", "initech"):
        tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": slug.title()})
        agent, _ = Agent.objects.get_or_create(tenant=tenant, name=f"{slug}-bot")
        for n in range(8):
            tool, _ = Tool.objects.get_or_create(name=f"{slug}_tool_{n}", tenant=tenant)
            targets.append((agent.tenant_id, agent.pk, tool.name))
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM audit_invocation")
        if cursor.fetchone()[0] >= rows:
            print(f"already filled with {rows} rows", file=sys.stderr)
            return
        cursor.execute(
            "CREATE TEMP TABLE bench_targets (n int, tenant_id bigint, agent_id bigint, tool text)"
        )
        for n, target in enumerate(targets):
            cursor.execute("INSERT INTO bench_targets VALUES (%s, %s, %s, %s)", [n, *target])
        started = time.perf_counter()
        cursor.execute(FILL.replace("ROWS", str(rows)).replace("DAYS", str(days))
                       .replace("TARGETS", str(len(targets))))
        cursor.execute("ANALYZE audit_invocation")
        print(f"inserted {rows} invocations in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args()
    if "DATABASE_URL" not in os.environ or connection.vendor != "postgresql":
        sys.exit("Set DATABASE_URL to a scratch PostgreSQL database: this script fills it.")
    fill(args.rows, args.days)
    root, _ = User.objects.get_or_create(
        username="bench-root", defaults={"is_staff": True, "is_superuser": True}
    )
    windows = ("7d", "30d")
    with raw_rows_only():
        raw = [time_dashboard(root, window) for window in windows]
    started = time.perf_counter()
    report = roll_up_invocations()
    rolled_s = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE dashboards_invocationrollup; ANALYZE dashboards_latencyrollup")
    rolled = [time_dashboard(root, window) for window in windows]
    print(f"rolled up {report.start:%Y-%m-%d %H:00} to {report.end:%Y-%m-%d %H:00} in {rolled_s:.1f} s: "
          f"{report.invocation_rows} call rows, {report.latency_rows} latency rows", file=sys.stderr)
    print("| dashboard, every tenant | raw rows (ms) | rollups (ms) | queries raw / rollups |")
    print("|---|---:|---:|---:|")
    for before, after in zip(raw, rolled, strict=True):
        print(f"| {before.window} | {before.median_ms:.0f} | {after.median_ms:.0f} | "
              f"{before.queries} / {after.queries} |")


if __name__ == "__main__":
    main()
