"""The ledger's writes land whole or not at all, on both ways of writing them.

PostgreSQL writes an intent with its event (and approval), and a transition with its
event, as one statement; other databases (SQLite under `make run`) in a transaction.
Every test runs both ways; most run outside a test transaction, as the invoke path does.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import DataError, IntegrityError, connection, transaction
from django.utils import timezone

from apps.common import db
from apps.common.db import insert_together
from apps.ledger.models import Approval, LedgerEntry, LedgerEvent, LedgerState
from apps.ledger.services import ApprovalSpec, IntentSpec, ledger_open_intent
from apps.ledger.states import TransitionRefused, transition
from tests.factories import AgentFactory, ToolVersionFactory


@pytest.fixture(params=["one statement", "transaction"])
def write_path(request, monkeypatch) -> str:
    if request.param == "one statement" and connection.vendor != "postgresql":
        pytest.fail("the one-statement writes are PostgreSQL's; run the suite on PostgreSQL")
    monkeypatch.setattr(db, "one_statement_writes", lambda: request.param == "one statement")
    return request.param


@pytest.fixture
def spec() -> IntentSpec:
    agent = AgentFactory()
    version = ToolVersionFactory(side_effect="write")
    return IntentSpec(
        tenant_id=agent.tenant_id,
        agent_id=agent.pk,
        key=f"{agent.tenant.slug}/task-1/call-1/{version.tool.name}/abc",
        task_id="task-1",
        call_id="call-1",
        tool_id=version.tool_id,
        version_id=version.pk,
        subject="u-1",
        args_hash="abc",
        arguments={"query": "order 7"},
    )


def events_of(entry_id) -> list[tuple[str, str, str]]:
    return [(e.from_state, e.to_state, e.actor) for e in LedgerEvent.objects.filter(entry_id=entry_id)]


@pytest.mark.django_db(transaction=True)
def test_an_intent_is_committed_with_its_first_event(write_path, spec):
    opened = ledger_open_intent(spec=spec, actor="agent:a")

    assert opened.created
    stored = LedgerEntry.objects.get(pk=opened.entry.pk)
    assert (stored.state, stored.arguments, stored.key) == ("intent", {"query": "order 7"}, spec.key)
    assert stored.claimed_at is not None and stored.created_at is not None
    assert events_of(stored.pk) == [("", "intent", "agent:a")]


@pytest.mark.django_db(transaction=True)
def test_an_intent_that_needs_approval_is_written_with_it(write_path, spec):
    spec = IntentSpec(**{**spec.__dict__, "run_async": True, "approval": ApprovalSpec("over 500", 600)})

    entry = ledger_open_intent(spec=spec, actor="agent:a").entry

    approval = Approval.objects.get(entry_id=entry.pk)
    assert (approval.status, approval.reason, approval.args_hash) == ("pending", "over 500", "abc")
    assert LedgerEntry.objects.get(pk=entry.pk).claimed_at is None


@pytest.mark.django_db(transaction=True)
def test_a_second_intent_for_the_same_call_writes_nothing_and_gets_the_first(write_path, spec):
    first = ledger_open_intent(spec=spec, actor="agent:a")

    again = ledger_open_intent(spec=spec, actor="agent:b")

    assert not again.created and again.entry.pk == first.entry.pk
    assert LedgerEntry.objects.count() == 1
    assert events_of(first.entry.pk) == [("", "intent", "agent:a")]


@pytest.mark.django_db(transaction=True)
def test_when_one_row_cannot_be_written_none_is(write_path, spec):
    entry = LedgerEntry(
        tenant_id=spec.tenant_id, agent_id=spec.agent_id, key=spec.key, task_id="t", call_id="c",
        tool_id=spec.tool_id, version_id=spec.version_id, args_hash="abc", arguments={},
    )
    event = LedgerEvent(entry=entry, to_state="intent", actor="agent:a")
    no_such_tenant = Approval(
        entry=entry, tenant_id=10**9, version_id=spec.version_id, args_hash="abc", reason="r",
        expires_at=timezone.now() + timedelta(minutes=5),
    )

    with pytest.raises(IntegrityError):
        insert_together(entry, event, no_such_tenant)

    assert (LedgerEntry.objects.count(), LedgerEvent.objects.count(), Approval.objects.count()) == (0, 0, 0)


@pytest.mark.django_db
def test_a_taken_key_inside_a_transaction_leaves_that_transaction_usable(write_path, spec):
    # pytest-django runs this test inside a transaction, as a caller's atomic() would.
    first = ledger_open_intent(spec=spec, actor="agent:a")

    again = ledger_open_intent(spec=spec, actor="agent:b")

    assert again.entry.pk == first.entry.pk
    assert LedgerEntry.objects.filter(pk=first.entry.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_a_transition_moves_the_entry_and_records_its_event(write_path, spec):
    entry = ledger_open_intent(spec=spec, actor="agent:a").entry

    transition(
        entry_id=entry.pk, from_state="intent", to_state="committed", actor="executor:python",
        note="done", data={"ms": 3}, result={"ok": True},
    )

    stored = LedgerEntry.objects.get(pk=entry.pk)
    assert (stored.state, stored.result) == ("committed", {"ok": True})
    assert stored.settled_at is not None and stored.updated_at >= stored.created_at
    last = LedgerEvent.objects.filter(entry_id=entry.pk).last()
    assert (last.from_state, last.to_state, last.note) == ("intent", "committed", "done")
    assert last.data == {"ms": 3}


@pytest.mark.django_db(transaction=True)
def test_a_transition_from_a_state_the_entry_left_changes_nothing(write_path, spec):
    entry = ledger_open_intent(spec=spec, actor="agent:a").entry
    transition(entry_id=entry.pk, from_state="intent", to_state="unknown", actor="sweeper")

    with pytest.raises(TransitionRefused):
        transition(entry_id=entry.pk, from_state="intent", to_state="committed", actor="executor:python")

    assert LedgerEntry.objects.get(pk=entry.pk).state == "unknown"
    assert events_of(entry.pk) == [("", "intent", "agent:a"), ("intent", "unknown", "sweeper")]


@pytest.mark.django_db(transaction=True)
def test_of_concurrent_movers_exactly_one_wins(write_path, spec):
    entry = ledger_open_intent(spec=spec, actor="agent:a").entry
    movers = 8
    start = threading.Barrier(movers)
    won: list[str] = []

    def move(n: int) -> None:
        start.wait()
        try:
            transition(
                entry_id=entry.pk, from_state="intent",
                to_state=LedgerState.COMMITTED if n % 2 else LedgerState.FAILED, actor=f"mover:{n}",
            )
            won.append(f"mover:{n}")
        except TransitionRefused:
            pass
        finally:
            connection.close()

    threads = [threading.Thread(target=move, args=(n,)) for n in range(movers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(won) == 1
    assert [actor for _, _, actor in events_of(entry.pk)] == ["agent:a", won[0]]


@pytest.mark.django_db(transaction=True)
def test_a_transition_inside_a_callers_transaction_rolls_back_with_it(write_path, spec):
    entry = ledger_open_intent(spec=spec, actor="agent:a").entry

    with pytest.raises(RuntimeError), transaction.atomic():
        transition(entry_id=entry.pk, from_state="intent", to_state="unknown", actor="sweeper")
        raise RuntimeError("the caller failed after the transition")

    assert LedgerEntry.objects.get(pk=entry.pk).state == "intent"
    assert events_of(entry.pk) == [("", "intent", "agent:a")]



@pytest.mark.django_db(transaction=True)
def test_a_transition_whose_event_cannot_be_written_moves_nothing(write_path, spec):
    entry = ledger_open_intent(spec=spec, actor="agent:a").entry

    with pytest.raises(DataError):
        transition(entry_id=entry.pk, from_state="intent", to_state="committed", actor="x" * 201)

    assert LedgerEntry.objects.get(pk=entry.pk).state == "intent"
    assert events_of(entry.pk) == [("", "intent", "agent:a")]


@pytest.mark.django_db(transaction=True)
def test_once_prepared_the_statements_write_what_they_say(spec):
    # psycopg prepares a statement on its fifth use on a connection (prepare_threshold).
    calls = [f"call-{n}" for n in range(8)]
    for n, call_id in enumerate(calls):
        opened = ledger_open_intent(
            spec=IntentSpec(**{**spec.__dict__, "call_id": call_id, "key": f"{spec.key}/{call_id}",
                               "arguments": {"n": n}}),
            actor="agent:a",
        )
        transition(entry_id=opened.entry.pk, from_state="intent", to_state="committed",
                   actor="executor:python", note=f"done {n}", result={"n": n}, error=None)

    stored = {e.call_id: e for e in LedgerEntry.objects.filter(call_id__in=calls)}
    assert [(stored[c].state, stored[c].arguments, stored[c].result, stored[c].error) for c in calls] == [
        ("committed", {"n": n}, {"n": n}, None) for n in range(8)
    ]
    assert [events_of(stored[c].pk)[-1] for c in calls] == [("intent", "committed", "executor:python")] * 8
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%ledger_ledgerentry%'"
        )
        assert cursor.fetchone() == (2,)
