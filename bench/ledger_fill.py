"""Fill the side-effect ledger to millions of rows in minutes, for `make bench`.

PostgreSQL generates the rows itself (generate_series, in chunks, one transaction). For a
large fill the ledger's indexes and constraints are dropped first and rebuilt at the end:
building a B-tree over 10 M rows by sorting takes seconds, keeping 13 of them up to date
row by row took 90 s per million here. The rebuilt schema is the migrated one, definition
for definition (the definitions are read back from the catalog, not written here).

The rows look like a ledger in production: two events each (intent, then the outcome),
about 97 % committed, 3 % failed, one in 10,000 unknown (half of those in triage), spread
over the last 90 days, with task ids as random as real ones, so the bench's own inserts
land all over the key indexes rather than at one warm end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection, transaction

from apps.catalog.models import ToolVersion, VersionStatus
from apps.catalog.selectors import tool_visible_by_name
from apps.ledger.models import LedgerEntry, LedgerEvent
from apps.tenancy.models import Agent

ENTRIES = LedgerEntry._meta.db_table
EVENTS = LedgerEvent._meta.db_table
CHUNK_ROWS = 500_000
# Below this many new rows, keeping the indexes up to date is cheaper than rebuilding them.
REBUILD_FROM_ROWS = 200_000
SPREAD_DAYS = 90


@dataclass(frozen=True)
class FillTarget:
    """Who the generated entries belong to: one agent calling one write tool."""

    tenant_id: int
    tenant_slug: str
    agent_id: int
    tool_id: int
    tool_name: str
    version_id: int
    subject: str


def fill_target(*, tenant_slug: str, agent_name: str, tool_name: str, subject: str) -> FillTarget:
    """The published version of `tool_name` called by that agent for `subject`."""
    agent = Agent.objects.select_related("tenant").get(tenant__slug=tenant_slug, name=agent_name)
    tool = tool_visible_by_name(tenant=agent.tenant_id, name=tool_name)
    version = ToolVersion.objects.get(tool=tool, status=VersionStatus.PUBLISHED)
    return FillTarget(
        tenant_id=agent.tenant_id, tenant_slug=tenant_slug, agent_id=agent.pk, tool_id=version.tool_id,
        tool_name=tool_name, version_id=version.pk, subject=subject,
    )


@dataclass(frozen=True)
class _Definition:
    table: str
    name: str
    sql: str  # what recreates it
    is_foreign_key: bool


def ledger_rows() -> int:
    return LedgerEntry.objects.count()


def ledger_fill(
    *, rows: int, target: FillTarget, rebuild: bool | None = None, progress: Callable[[str], None] = print
) -> int:
    """Add entries (two events each) until the ledger holds `rows`; returns how many were added.

    `rebuild` drops and rebuilds the indexes and constraints around the insert (default:
    for REBUILD_FROM_ROWS new rows or more). Everything happens in one transaction, so an
    interrupted fill leaves the ledger as it was.
    """
    start = ledger_rows()
    missing = rows - start
    if missing <= 0:
        return 0
    rebuild = missing >= REBUILD_FROM_ROWS if rebuild is None else rebuild
    started = time.monotonic()
    with transaction.atomic(), connection.cursor() as cursor:
        # The generated rows reference rows that exist: skip the per-row foreign-key triggers.
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute("SET LOCAL maintenance_work_mem = '1GB'")
        definitions = _drop_indexes(cursor) if rebuild else []
        done = 0
        while done < missing:
            size = min(CHUNK_ROWS, missing - done)
            _insert_chunk(cursor, target, first=start + done + 1, last=start + done + size, total=rows)
            done += size
            elapsed = time.monotonic() - started
            progress(f"  ledger fill: {start + done:,} / {rows:,} entries ({elapsed:.0f} s)")
        cursor.execute("SET LOCAL session_replication_role = DEFAULT")
        if definitions:
            progress(f"  rebuilding {len(definitions)} indexes and constraints…")
            for definition in sorted(definitions, key=lambda d: d.is_foreign_key):
                cursor.execute(definition.sql)
    progress(f"  ledger fill: {missing:,} entries added in {time.monotonic() - started:.0f} s")
    return missing


def ledger_vacuum_analyze() -> None:
    """What autovacuum would do in time (visibility map, planner statistics), then a
    checkpoint, so that what comes next does not pay for writing the fill out to disk.
    Outside a transaction; CHECKPOINT needs a superuser or pg_checkpoint."""
    with connection.cursor() as cursor:
        for table in (ENTRIES, EVENTS):
            cursor.execute(f"VACUUM ANALYZE {table}")
        cursor.execute("CHECKPOINT")


def ledger_empty() -> None:
    """Delete every entry, with its events, approvals and reconcile attempts."""
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {ENTRIES} CASCADE")


def _drop_indexes(cursor) -> list[_Definition]:
    """Drop the two tables' indexes and constraints (and foreign keys into the entries);
    return how to recreate them."""
    cursor.execute(
        """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid), contype = 'f'
        FROM pg_constraint
        WHERE (contype IN ('p', 'u') AND conrelid = ANY(%(tables)s::regclass[]))
           OR (contype = 'f' AND confrelid = ANY(%(tables)s::regclass[]))
        """,
        {"tables": [ENTRIES, EVENTS]},
    )
    constraints = [
        _Definition(table, name, f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {body}', is_fk)
        for table, name, body, is_fk in cursor.fetchall()
    ]
    cursor.execute(
        """
        SELECT indrelid::regclass::text, indexrelid::regclass::text, pg_get_indexdef(indexrelid)
        FROM pg_index
        WHERE indrelid = ANY(%(tables)s::regclass[])
          AND indexrelid NOT IN (SELECT conindid FROM pg_constraint WHERE contype IN ('p', 'u', 'x'))
        """,
        {"tables": [ENTRIES, EVENTS]},
    )
    indexes = [_Definition(table, name, sql, False) for table, name, sql in cursor.fetchall()]
    for definition in sorted(constraints, key=lambda d: not d.is_foreign_key):
        cursor.execute(f'ALTER TABLE {definition.table} DROP CONSTRAINT "{definition.name}"')
    for definition in indexes:
        cursor.execute(f"DROP INDEX {definition.name}")
    return constraints + indexes


def _insert_chunk(cursor, target: FillTarget, *, first: int, last: int, total: int) -> None:
    """Entries number `first` to `last` of `total`, oldest first, and their two events."""
    cursor.execute(
        f"""
        WITH source AS (
            SELECT n, md5(n::text) AS h,
                   now() - interval '1 minute'
                         - (%(total)s::bigint - n)
                           * (interval '{SPREAD_DAYS} days' / %(total)s::bigint) AS at,
                   CASE WHEN n %% 10000 = 0 THEN 'unknown'
                        WHEN n %% 33 = 0 THEN 'failed'
                        ELSE 'committed' END AS state
            FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS n
        ), entries AS (
            INSERT INTO {ENTRIES} (
                id, created_at, updated_at, key, task_id, call_id, subject, args_hash, arguments,
                state, result, error, attempts, next_check_at, settled_at, triage_since,
                claimed_at, run_async, context, tenant_id, agent_id, tool_id, version_id)
            SELECT gen_random_uuid(), at, at + interval '40 ms',
                   %(tenant)s || '/t' || substr(h, 1, 20) || '/call_' || (n %% 4) || '/'
                       || %(tool)s || '/' || h || md5(h),
                   't' || substr(h, 1, 20), 'call_' || (n %% 4), %(subject)s, h || md5(h),
                   jsonb_build_object('order_id', 'ORD-' || lpad((n %% 300 + 1)::text, 6, '0'),
                                      'reason', 'customer_request', 'user_id', %(subject)s),
                   state,
                   CASE WHEN state = 'committed' THEN jsonb_build_object(
                       'order_id', 'ORD-' || lpad((n %% 300 + 1)::text, 6, '0'), 'status', 'cancelled',
                       'amount_cents', 500 + n %% 49500, 'currency', 'EUR', 'placed_on', '2026-01-01') END,
                   CASE WHEN state = 'failed' THEN jsonb_build_object(
                       'status', 'error', 'call_id', 'call_' || (n %% 4), 'tool', %(tool)s,
                       'kind', 'business_rule', 'recoverable', true,
                       'message', 'Order is already cancelled; nothing was changed.',
                       'hint', 'Do not call cancel_order for it again.', 'details', '[]'::jsonb,
                       'raw', null) END,
                   CASE WHEN state = 'unknown' THEN 5 ELSE 0 END,
                   CASE WHEN state = 'unknown' AND n %% 20000 <> 0 THEN at + interval '1 hour' END,
                   CASE WHEN state <> 'unknown' THEN at + interval '40 ms' END,
                   CASE WHEN state = 'unknown' AND n %% 20000 = 0 THEN at + interval '1 hour' END,
                   at, false, '{{}}'::jsonb, %(tenant_id)s, %(agent_id)s, %(tool_id)s, %(version_id)s
            FROM source
            RETURNING id, state, created_at
        )
        INSERT INTO {EVENTS} (entry_id, from_state, to_state, actor, note, data, at)
        SELECT id, '', 'intent', %(actor)s, '', '{{}}'::jsonb, created_at FROM entries
        UNION ALL
        SELECT id, 'intent', state, 'executor:python', '', '{{}}'::jsonb, created_at + interval '35 ms'
        FROM entries
        """,
        {
            "first": first,
            "last": last,
            "total": total,
            "tenant": target.tenant_slug,
            "tool": target.tool_name,
            "subject": target.subject,
            "tenant_id": target.tenant_id,
            "agent_id": target.agent_id,
            "tool_id": target.tool_id,
            "version_id": target.version_id,
            "actor": f"agent:{target.tenant_slug}/fill",
        },
    )
