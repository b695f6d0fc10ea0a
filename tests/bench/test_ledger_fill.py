"""The bench's bulk fill: the ledger it leaves behind is a valid ledger with its schema intact."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from apps.demo_shop.seed import demo_seed
from apps.ledger.models import LedgerEntry, LedgerEvent, LedgerState
from bench.ledger_fill import ENTRIES, EVENTS, fill_target, ledger_empty, ledger_fill

pytestmark = pytest.mark.django_db


def _schema() -> set[tuple[str, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
            WHERE conrelid = ANY(%(t)s::regclass[]) OR confrelid = ANY(%(t)s::regclass[])
            UNION ALL
            SELECT tablename, indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%(t)s)
            """,
            {"t": [ENTRIES, EVENTS]},
        )
        return set(cursor.fetchall())


@pytest.fixture
def target():
    demo_seed()
    return fill_target(
        tenant_slug="demo", agent_name="support-bot", tool_name="cancel_order", subject="u-1001"
    )


@pytest.mark.parametrize("rebuild", [True, False], ids=["indexes rebuilt", "indexes kept"])
def test_the_ledger_is_filled_to_the_size_asked_with_its_schema_as_migrated(target, rebuild):
    # given
    schema_before = _schema()

    # when
    added = ledger_fill(rows=30_000, target=target, rebuild=rebuild, progress=lambda _: None)

    # then
    assert added == 30_000 and LedgerEntry.objects.count() == 30_000
    assert LedgerEvent.objects.count() == 60_000
    assert _schema() == schema_before
    states = set(LedgerEntry.objects.values_list("state", flat=True).distinct())
    assert states == {LedgerState.COMMITTED, LedgerState.FAILED, LedgerState.UNKNOWN}
    assert LedgerEntry.objects.filter(state=LedgerState.UNKNOWN, triage_since__isnull=False).exists()
    entry = LedgerEntry.objects.filter(state=LedgerState.COMMITTED).first()
    assert entry.key == f"demo/{entry.task_id}/{entry.call_id}/cancel_order/{entry.args_hash}"
    assert [e.to_state for e in entry.events.all()] == ["intent", "committed"]


def test_a_filled_ledger_still_refuses_a_second_row_for_a_key(target):
    ledger_fill(rows=1_000, target=target, rebuild=True, progress=lambda _: None)
    entry = LedgerEntry.objects.first()

    with pytest.raises(IntegrityError), transaction.atomic():
        LedgerEntry.objects.create(
            tenant_id=entry.tenant_id, agent_id=entry.agent_id, key=entry.key, task_id="other",
            call_id="c1", tool_id=entry.tool_id, version_id=entry.version_id, args_hash=entry.args_hash,
            arguments={},
        )


def test_a_ledger_at_its_size_already_is_left_alone_and_emptying_deletes_the_events_too(target):
    ledger_fill(rows=100, target=target, progress=lambda _: None)

    assert ledger_fill(rows=50, target=target, progress=lambda _: None) == 0
    ledger_empty()
    assert not LedgerEntry.objects.exists() and not LedgerEvent.objects.exists()
