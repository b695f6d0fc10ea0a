"""Migration audit 0004 on a database that already has rows: they move into partitions by
their time, keep their ids, and new rows are numbered after them. Backwards it gives the
plain tables back with the same rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.audit.models import AuditEvent
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE, AFTER = [("audit", "0003_admin_filter_indexes")], [("audit", "0004_partition_logs_by_time")]


def migrate(targets: list[tuple[str, str]] | None = None) -> None:
    """To `targets`, or to the latest migration of every app."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets or executor.loader.graph.leaf_nodes())


def rows(table: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, tableoid::regclass::text FROM {table} ORDER BY id")
        return cursor.fetchall()


def relkind(table: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE relname = %s", [table])
        return cursor.fetchone()[0]


def test_existing_rows_are_moved_into_partitions_of_their_time_and_back():
    agent = AgentFactory()
    migrate(BEFORE)
    try:
        assert relkind("audit_invocation") == "r"
        days = [datetime(2026, 3, 1, 10, tzinfo=UTC) + timedelta(days=n) for n in (0, 0, 1, 9)]
        with connection.cursor() as cursor:
            for n, day in enumerate(days):
                cursor.execute(
                    "INSERT INTO audit_invocation (tenant_id, agent_id, task_id, call_id, tool_name, status, "
                    "kind, latency_ms, args_chars, result_chars, dry_run, envelope, created_at) "
                    "VALUES (%s, %s, 't', %s, 'x', 'ok', '', 1, 0, 0, false, '{}', %s)",
                    [agent.tenant_id, agent.pk, f"c{n}", day],
                )
                cursor.execute(
                    "INSERT INTO audit_auditevent (actor, action, target_type, target_id, note, data, at) "
                    "VALUES ('ops', 'a', 't', %s, '', '{}', %s)",
                    [str(n), day],
                )
        invocations_before, events_before = rows("audit_invocation"), rows("audit_auditevent")

        migrate(AFTER)

        assert relkind("audit_invocation") == "p" and relkind("audit_auditevent") == "p"
        assert rows("audit_invocation") == [
            (pk, name)
            for (pk, _), name in zip(
                invocations_before,
                ["audit_invocation_p20260301", "audit_invocation_p20260301", "audit_invocation_p20260302",
                 "audit_invocation_p20260310"],
                strict=True,
            )
        ]
        # 2026-03-01 is a Sunday: its week started on Monday 2026-02-23.
        assert [name for _, name in rows("audit_auditevent")] == [
            "audit_auditevent_p20260223", "audit_auditevent_p20260223", "audit_auditevent_p20260302",
            "audit_auditevent_p20260309",
        ]
        assert [pk for pk, _ in rows("audit_auditevent")] == [pk for pk, _ in events_before]
        # The table as of 0004, not as the model is now (later migrations add columns).
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO audit_invocation (tenant_id, agent_id, task_id, call_id, tool_name, status, "
                "kind, latency_ms, args_chars, result_chars, dry_run, envelope, created_at) "
                "VALUES (%s, %s, 't', 'new', 'x', 'ok', '', 1, 0, 0, false, '{}', now()) RETURNING id",
                [agent.tenant_id, agent.pk],
            )
            new_pk = cursor.fetchone()[0]
            cursor.execute("SELECT created_at FROM audit_invocation WHERE call_id = 'c3'")
            assert cursor.fetchone()[0] == days[3]
        assert new_pk > max(pk for pk, _ in invocations_before)

        migrate(BEFORE)

        assert relkind("audit_invocation") == "r" and relkind("audit_auditevent") == "r"
        assert [pk for pk, _ in rows("audit_invocation")] == [*(pk for pk, _ in invocations_before), new_pk]
        assert AuditEvent.objects.count() == 4
    finally:
        migrate()
