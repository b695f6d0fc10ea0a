"""Fill the invocation log and the audit events to millions of rows in minutes, server-side.

The demo is seeded, plus two tenants with an agent each: every (tenant, agent, published
tool) is a target, and generated row n goes to target n mod their count. PostgreSQL
generates the rows itself (generate_series, CHUNK rows per statement) with the table's
indexes and foreign keys dropped, and rebuilds them after from their definitions as the
catalog holds them: keeping ten indexes up to date row by row is several times slower.

Invocations: spread at random over the last `days` days, 10 % errors of four kinds, 10 %
empty, latencies log-uniform from 2 to 300 ms (so the dashboard's percentiles and latency
buckets see a realistic spread). Audit events: 40 actions on 10 target types, spread over
400 days.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.management import call_command
from django.db import connection, transaction

from apps.catalog.models import ToolVersion
from apps.tenancy.models import Agent, Tenant

CHUNK = 1_000_000
AUDIT_DAYS = 400

FILL_INVOCATIONS = """
INSERT INTO audit_invocation (tenant_id, agent_id, task_id, call_id, tool_name, version_number, status, kind,
    latency_ms, args_chars, result_chars, execution_id, dry_run, envelope, created_at)
SELECT t.tenant_id, t.agent_id, 'bench-' || (g / 4), 'call_' || (g %% 4), t.tool, 1,
    CASE WHEN g %% 10 = 0 THEN 'error' WHEN g %% 10 = 1 THEN 'empty' ELSE 'ok' END,
    CASE WHEN g %% 10 = 0 THEN (ARRAY['invalid_args','timeout','forbidden','business_rule'])[1 + g %% 4]
         ELSE '' END,
    2 * exp(random() * 5), 60, 400, NULL, false, '{"status": "ok", "data": [1, 2, 3]}'::jsonb,
    now() - random() * %(days)s * interval '1 day'
FROM generate_series(%(first)s, %(last)s) AS g
JOIN bench_targets AS t ON t.n = g %% %(targets)s
"""

# Forty actions on ten target types, about as many as the code writes: the audit list's filters
# offer each, walked value to value. Row g goes to target g mod targets and takes the action of
# its turn among that target's rows, so every tenant gets every action and type whatever the
# number of targets (a stride independent of it aliased with some counts and left gaps).
AUDIT_ACTIONS = [
    f"{target}.{verb}"
    for target in ("tool", "tool_version", "toolset", "agent", "agent_key", "grant", "tenant_policy",
                   "upstream", "credential", "ledger.settle")
    for verb in ("create", "update", "delete", "publish")
]
AUDIT_TARGET_TYPES = ["catalog.Tool", "catalog.ToolVersion", "catalog.Toolset", "tenancy.Agent",
                      "tenancy.AgentKey", "tenancy.Grant", "tenancy.TenantPolicy", "upstreams.Upstream",
                      "upstreams.Credential", "ledger.LedgerEntry"]

FILL_AUDIT = f"""
INSERT INTO audit_auditevent (tenant_id, actor, action, target_type, target_id, note, data, at)
SELECT t.tenant_id, 'ops-' || (g %% 20),
    (ARRAY{AUDIT_ACTIONS!r})[1 + (g / %(targets)s) %% {len(AUDIT_ACTIONS)}],
    (ARRAY{AUDIT_TARGET_TYPES!r})[1 + (3 * (g / %(targets)s)) %% {len(AUDIT_TARGET_TYPES)}],
    (g %% 5000)::text, '', '{{"bench": true}}'::jsonb,
    now() - random() * %(days)s * interval '1 day'
FROM generate_series(%(first)s, %(last)s) AS g
JOIN bench_targets AS t ON t.n = g %% %(targets)s
"""


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


def fill(table: str, sql: str, *, rows: int, days: int, targets: int) -> None:
    """`rows` generated rows over the last `days` days in `table`, unless it holds as many."""
    if run(f"SELECT count(*) FROM {table}")[0][0] >= rows:
        say(f"{table} already holds {rows:,} rows")
        return
    started = time.perf_counter()
    # One transaction: an interrupted fill leaves the table as it was, indexes included.
    with transaction.atomic(), without_indexes(table):
        run(f"TRUNCATE {table}")
        for first in range(1, rows + 1, CHUNK):
            last = min(first + CHUNK - 1, rows)
            run(sql, {"first": first, "last": last, "days": days, "targets": targets})
            say(f"  {table}: {last:,} rows after {time.perf_counter() - started:.0f} s")
    run(f"VACUUM ANALYZE {table}")
    say(f"{table}: {rows:,} rows filled, indexed and analyzed in {time.perf_counter() - started:.0f} s")
