"""How fast the admin's big lists and the dashboard are with a million ledger and invocation rows.

    DATABASE_URL=postgres://…/scratch .venv/bin/python scripts/bench_admin.py [--rows 1000000]

Fills the given (scratch!) PostgreSQL database with generate_series (a few tens of seconds),
ANALYZEs it, then times each page through Django's test client, as a superuser and as
tenant-scoped staff: one warm-up, then the median of five. Prints a Markdown table for
docs/performance.md. Never part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
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
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from apps.catalog.models import ToolVersion  # noqa: E402
from apps.tenancy.models import Agent, StaffScope, Tenant  # noqa: E402

FILL = """
INSERT INTO audit_invocation (tenant_id, agent_id, task_id, call_id, tool_name, version_number, status, kind,
    latency_ms, args_chars, result_chars, execution_id, dry_run, envelope, created_at)
SELECT t.tenant_id, t.agent_id, 'bench-' || (g / 4), 'call_' || (g % 4), t.tool, 1,
    CASE WHEN g % 10 = 0 THEN 'error' WHEN g % 10 = 1 THEN 'empty' ELSE 'ok' END,
    CASE WHEN g % 10 = 0 THEN (ARRAY['invalid_args','timeout','forbidden','business_rule'])[1 + g % 4]
         ELSE '' END,
    5 + random() * 200, 60, 400, NULL, false, '{"status": "ok", "data": [1, 2, 3]}'::jsonb,
    now() - (random() * interval '30 days')
FROM generate_series(1, ROWS) AS g
JOIN bench_targets AS t ON t.n = g % TARGETS;

INSERT INTO ledger_ledgerentry (id, tenant_id, agent_id, key, task_id, call_id, tool_id, version_id, subject,
    args_hash, arguments, state, result, error, run_async, claimed_at, attempts, next_check_at, triage_since,
    settled_at, created_at, updated_at)
SELECT gen_random_uuid(), t.tenant_id, t.agent_id, 'bench/' || g, 'bench-' || g, 'call_1', t.tool_id,
    t.version_id, 'u-' || (g % 5000), md5(g::text), '{"order_id": "ORD-000001"}'::jsonb,
    CASE WHEN g % 1000 = 0 THEN 'unknown' WHEN g % 50 = 1 THEN 'failed' ELSE 'committed' END,
    '{"ok": true}'::jsonb, NULL, false, NULL, CASE WHEN g % 1000 = 0 THEN 5 ELSE 0 END, NULL,
    CASE WHEN g % 2000 = 0 THEN now() - (random() * interval '2 days') END, NULL, c.at, c.at
FROM generate_series(1, ROWS) AS g
JOIN bench_targets AS t ON t.n = g % TARGETS
CROSS JOIN LATERAL (SELECT now() - (random() * interval '30 days') + (g * interval '0 second') AS at) AS c;
"""


def fill(rows: int) -> None:
    call_command("migrate", verbosity=0)
    call_command("seed_demo", stdout=open(os.devnull, "w"))
    for slug in ("acme", "globex"):
        tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": slug.title()})
        Agent.objects.get_or_create(tenant=tenant, name=f"{slug}-bot")
    targets = [
        (agent.tenant_id, agent.pk, version.tool.name, version.tool_id, version.pk)
        for agent in Agent.objects.all()
        for version in ToolVersion.objects.filter(status="published").select_related("tool")
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM ledger_ledgerentry WHERE key LIKE %s", ["bench/%"])
        if cursor.fetchone()[0] >= rows:
            print(f"already filled with {rows} rows", file=sys.stderr)
            return
        cursor.execute("DROP TABLE IF EXISTS bench_targets")
        cursor.execute(
            "CREATE TEMP TABLE bench_targets (n int, tenant_id bigint, agent_id bigint, tool text, "
            "tool_id bigint, version_id bigint)"
        )
        for n, target in enumerate(targets):
            cursor.execute("INSERT INTO bench_targets VALUES (%s, %s, %s, %s, %s, %s)", [n, *target])
        started = time.perf_counter()
        cursor.execute(FILL.replace("ROWS", str(rows)).replace("TARGETS", str(len(targets))))
        cursor.execute("ANALYZE audit_invocation; ANALYZE ledger_ledgerentry;")
        print(
            f"inserted {rows} invocations and {rows} ledger entries in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )


PAGES = [
    ("ledger entries", "/admin/ledger/ledgerentry/"),
    ("ledger, state=unknown", "/admin/ledger/ledgerentry/?state=unknown"),
    ("ledger, one tool", "/admin/ledger/ledgerentry/?tool={tool_id}"),
    ("ledger, older than 7 days", "/admin/ledger/ledgerentry/?age=gt7d"),
    ("ledger, search a task id", "/admin/ledger/ledgerentry/?q=bench-4242"),
    ("ledger entry page", "/admin/ledger/ledgerentry/{entry_id}/change/"),
    ("triage queue", "/admin/ledger/triageentry/"),
    ("invocation log", "/admin/audit/invocation/"),
    ("invocations, errors of a kind", "/admin/audit/invocation/?status=error&kind=timeout"),
    ("invocations, one tool, 24 h", "/admin/audit/invocation/?tool_name=search_orders&age=1d"),
    ("dashboard, 24 h", "/admin/dashboard/?window=1d"),
    ("dashboard, 7 days", "/admin/dashboard/?window=7d"),
]


def timed(client: Client, url: str) -> tuple[float, int]:
    assert client.get(url).status_code == 200, url
    samples = []
    for _ in range(5):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, url
    return statistics.median(samples), len(queries)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    if "DATABASE_URL" not in os.environ or connection.vendor != "postgresql":
        sys.exit("Set DATABASE_URL to a scratch PostgreSQL database: this script fills it.")
    fill(args.rows)
    root, _ = User.objects.get_or_create(
        username="bench-root", defaults={"is_staff": True, "is_superuser": True}
    )
    staff, _ = User.objects.get_or_create(username="bench-staff", defaults={"is_staff": True})
    staff.user_permissions.set(
        __import__("django.contrib.auth.models", fromlist=["Permission"]).Permission.objects.filter(
            content_type__app_label__in=["ledger", "audit"]
        )
    )
    StaffScope.objects.update_or_create(user=staff, defaults={"tenant": Tenant.objects.get(slug="demo")})
    version = ToolVersion.objects.get(
        tool__tenant__slug="demo", tool__name="search_orders", status="published"
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM ledger_ledgerentry WHERE key = 'bench/4242'")
        entry_id = cursor.fetchone()[0]
    print("| page | superuser (ms) | tenant staff (ms) | queries |")
    print("|---|---:|---:|---:|")
    for name, url in PAGES:
        url = url.format(tool_id=version.tool_id, entry_id=entry_id)
        timings = []
        for user in (root, staff):
            client = Client()
            client.force_login(user)
            timings.append(timed(client, url))
        print(f"| {name} | {timings[0][0]:.0f} | {timings[1][0]:.0f} | {timings[0][1]} |")


if __name__ == "__main__":
    main()
