"""The bench's bulk fill of the logs: the rows asked for, over the days asked for, and the
tables' indexes and foreign keys as migrated, even when a fill fails half-way."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import DataError, connection
from django.utils import timezone

from apps.audit.models import AuditEvent, Invocation
from bench.log_fill import (
    AUDIT_ACTIONS,
    AUDIT_DAYS,
    AUDIT_TARGET_TYPES,
    FILL_AUDIT,
    FILL_INVOCATIONS,
    fill,
    seed,
)

# The fill vacuums after its transaction: that cannot run inside a test's transaction.
pytestmark = pytest.mark.django_db(transaction=True)

TABLE = Invocation._meta.db_table


def _schema() -> set[tuple[str, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %(t)s::regclass
            UNION ALL
            SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %(t)s
            """,
            {"t": TABLE},
        )
        return set(cursor.fetchall())


def test_the_log_is_filled_over_the_days_asked_with_its_schema_as_migrated():
    # given
    targets = seed()
    schema_before = _schema()

    # when
    fill(TABLE, FILL_INVOCATIONS, rows=3_000, days=30, targets=targets)

    # then
    assert Invocation.objects.count() == 3_000
    assert _schema() == schema_before
    oldest = Invocation.objects.order_by("created_at").first()
    assert oldest.created_at > timezone.now() - timedelta(days=30)
    assert set(Invocation.objects.values_list("status", flat=True).distinct()) == {"ok", "error", "empty"}
    assert Invocation.objects.values("tenant_id").distinct().count() == 3
    latencies = Invocation.objects.values_list("latency_ms", flat=True)
    assert 2 <= min(latencies) and max(latencies) <= 300


def test_every_tenant_gets_audit_events_of_every_action_and_target_type():
    # given
    targets = seed()

    # when
    fill(AuditEvent._meta.db_table, FILL_AUDIT, rows=4_000, days=AUDIT_DAYS, targets=targets)

    # then
    assert AuditEvent.objects.count() == 4_000
    for tenant_id in AuditEvent.objects.values_list("tenant_id", flat=True).distinct():
        events = AuditEvent.objects.filter(tenant_id=tenant_id)
        assert set(events.values_list("action", flat=True)) == set(AUDIT_ACTIONS)
        assert set(events.values_list("target_type", flat=True)) == set(AUDIT_TARGET_TYPES)
    assert AuditEvent.objects.order_by("at").first().at > timezone.now() - timedelta(days=AUDIT_DAYS)


def test_a_fill_that_fails_half_way_leaves_the_rows_and_indexes_it_found():
    # given
    targets = seed()
    fill(TABLE, FILL_INVOCATIONS, rows=500, days=30, targets=targets)
    schema_before = _schema()
    failing = "SELECT (%(first)s + %(last)s + %(days)s + %(targets)s) / 0"

    # when
    with pytest.raises(DataError):
        fill(TABLE, failing, rows=1_000, days=30, targets=targets)

    # then
    assert Invocation.objects.count() == 500
    assert _schema() == schema_before
