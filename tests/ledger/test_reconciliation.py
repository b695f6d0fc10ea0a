"""Unknown outcomes are found out, never guessed: sweeper, reconciler, triage, settling."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from apps.audit.models import AuditEvent
from apps.gateway.executors.base import ReconcileAnswer
from apps.gateway.reconciliation import ledger_reconcile_entry
from apps.ledger.models import LedgerEntry, LedgerState
from apps.ledger.reconciliation import entries_due_for_reconciliation, ledger_sweep
from apps.ledger.services import ledger_settle
from apps.ledger.states import TransitionRefused
from tests.gateway.callables import RECONCILE_ANSWERS, RUNS
from tests.gateway.conftest import invoke

pytestmark = pytest.mark.django_db


@pytest.fixture
def unknown_entry(api, publish_tool, session_for) -> LedgerEntry:
    """A write whose executor timed out: its outcome is unknown."""
    publish_tool(
        "pay", side_effect="write", executor_config={"callable": "tests.write_later_checked"}, timeout_s=1
    )
    body = invoke(api, "pay", '{"query": "order 7"}', session=session_for("u-1")).json()
    assert body["kind"] == "timeout"
    return LedgerEntry.objects.get(pk=body["execution_id"])


def replay(api, session_for) -> dict:
    return invoke(api, "pay", '{"query": "order 7"}', session=session_for("u-1")).json()


def test_an_unknown_entry_is_due_for_reconciliation_at_once(unknown_entry):
    assert unknown_entry.state == LedgerState.UNKNOWN
    assert entries_due_for_reconciliation(now=timezone.now() + timedelta(seconds=1)) == [unknown_entry.pk]


def test_found_at_the_provider_it_becomes_committed_with_the_real_result(unknown_entry, api, session_for):
    RECONCILE_ANSWERS[unknown_entry.key] = ReconcileAnswer(
        found=True, result={"refund_id": "re_42"}, note="found"
    )

    assert ledger_reconcile_entry(entry_id=unknown_entry.pk) == LedgerState.COMMITTED

    body = replay(api, session_for)
    assert body["status"] == "ok" and body["cached"] is True and body["data"] == {"refund_id": "re_42"}
    assert RUNS["tests.write_later_checked"] == 1
    events = [(e.from_state, e.to_state, e.actor) for e in unknown_entry.events.all()]
    assert events[-1] == ("unknown", "committed", "reconciler")


@pytest.mark.parametrize("found", [True, False])
def test_a_settling_answer_is_counted_like_the_attempt_listed_with_it(unknown_entry, found):
    RECONCILE_ANSWERS[unknown_entry.key] = ReconcileAnswer(found=found, result={"refund_id": "re_42"},
                                                           note="checked")

    ledger_reconcile_entry(entry_id=unknown_entry.pk)

    unknown_entry.refresh_from_db()
    assert unknown_entry.state in (LedgerState.COMMITTED, LedgerState.FAILED)
    assert unknown_entry.attempts == unknown_entry.reconcile_attempts.count() == 1


def test_certainly_absent_it_becomes_failed_and_says_nothing_happened(unknown_entry, api, session_for):
    RECONCILE_ANSWERS[unknown_entry.key] = ReconcileAnswer(found=False, note="no such request")

    assert ledger_reconcile_entry(entry_id=unknown_entry.pk) == LedgerState.FAILED

    body = replay(api, session_for)
    assert body["status"] == "error" and body["cached"] is True
    assert "Nothing happened" in body["hint"]


def test_still_unclear_after_the_last_attempt_it_waits_in_the_triage_queue(unknown_entry, settings):
    settings.TOOLHUB_RECONCILE_BACKOFF_S = [0, 0, 0]

    for _ in range(3):
        assert ledger_reconcile_entry(entry_id=unknown_entry.pk) == LedgerState.UNKNOWN

    unknown_entry.refresh_from_db()
    assert unknown_entry.attempts == 3 and unknown_entry.triage_since is not None
    assert [a.answer for a in unknown_entry.reconcile_attempts.all()] == ["unclear"] * 3
    assert entries_due_for_reconciliation(now=timezone.now() + timedelta(days=1)) == []


def test_an_executor_without_a_reconcile_hook_goes_to_triage_at_once(api, publish_tool, session_for):
    publish_tool(
        "slow_echo",
        side_effect="write",
        executor_config={"callable": "tests.slow"},
        timeout_s=0.1,
        parameters={
            "type": "object",
            "properties": {"sleep_ms": {"type": "integer"}},
            "required": ["sleep_ms"],
            "additionalProperties": False,
        },
        context_bindings={},
    )
    entry_id = invoke(api, "slow_echo", {"sleep_ms": 300}).json()["execution_id"]

    ledger_reconcile_entry(entry_id=entry_id)

    entry = LedgerEntry.objects.get(pk=entry_id)
    assert entry.state == LedgerState.UNKNOWN and entry.triage_since is not None and entry.attempts == 1


def test_settling_needs_a_note_happens_once_and_is_audited(unknown_entry, api, session_for):
    with pytest.raises(ValidationError):
        ledger_settle(entry=unknown_entry, outcome="committed", actor="ops:ana", note="  ")

    ledger_settle(
        entry=unknown_entry,
        outcome="committed",
        actor="ops:ana",
        note="seen in the PSP dashboard",
        result={"refund_id": "re_7"},
    )
    with pytest.raises(TransitionRefused):
        ledger_settle(entry=unknown_entry, outcome="failed", actor="ops:bob", note="double click")

    body = replay(api, session_for)
    assert body["status"] == "ok" and body["data"] == {"refund_id": "re_7"} and body["cached"] is True
    audit = AuditEvent.objects.get(action="ledger.settle.committed")
    assert audit.actor == "ops:ana" and audit.note == "seen in the PSP dashboard"


def test_the_sweeper_marks_executions_that_outlived_their_timeout_unknown(api, publish_tool, session_for):
    publish_tool("cancel", side_effect="write", timeout_s=2.0)  # claimed 5 s ago: past timeout + grace
    invoke(api, "cancel", '{"query": "a"}', session=session_for("u-1"))
    entry = LedgerEntry.objects.get()
    LedgerEntry.objects.filter(pk=entry.pk).update(
        state="intent", claimed_at=timezone.now() - timedelta(seconds=5)
    )

    report = ledger_sweep(now=timezone.now())

    entry.refresh_from_db()
    assert report.marked_unknown == [entry.pk] and entry.state == LedgerState.UNKNOWN
    assert entry.events.last().actor == "sweeper"


def test_the_sweeper_re_enqueues_async_intents_no_worker_claimed(api, publish_tool, session_for):
    publish_tool("cancel", side_effect="write", mode="async")
    invoke(api, "cancel", '{"query": "a"}', session=session_for("u-1"))
    entry = LedgerEntry.objects.get()
    assert entry.claimed_at is None and entry.run_async

    assert ledger_sweep(now=timezone.now()).to_enqueue == []
    assert ledger_sweep(now=timezone.now() + timedelta(minutes=1)).to_enqueue == [entry.pk]
