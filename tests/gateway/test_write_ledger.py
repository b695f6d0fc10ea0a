"""Writes go through the side-effect ledger: at most once per key, uncertainty kept as unknown."""

from __future__ import annotations

import pytest

from apps.ledger.models import LedgerEntry, LedgerState
from tests.gateway.callables import RUNS
from tests.gateway.conftest import invoke

pytestmark = pytest.mark.django_db

SLOW_SCHEMA = {
    "type": "object",
    "properties": {"sleep_ms": {"type": "integer"}},
    "required": ["sleep_ms"],
    "additionalProperties": False,
}


@pytest.fixture
def write_tool(publish_tool):
    return publish_tool("cancel_thing", side_effect="write")


def test_a_write_commits_once_and_a_replay_returns_the_stored_result(api, write_tool, session_for):
    session = session_for("u-1")

    first = invoke(api, "cancel_thing", '{"query": "A"}', session=session).json()
    replay = invoke(api, "cancel_thing", '{ "query" : "A" }', session=session).json()

    assert first["status"] == "ok" and first["cached"] is False
    assert replay["status"] == "ok" and replay["cached"] is True
    assert replay["data"] == first["data"] and replay["execution_id"] == first["execution_id"]
    assert RUNS["tests.echo"] == 1
    entry = LedgerEntry.objects.get()
    assert entry.state == LedgerState.COMMITTED
    assert entry.key.startswith("acme/t-1/call_1/cancel_thing/")
    assert [(e.from_state, e.to_state) for e in entry.events.all()] == [
        ("", "intent"),
        ("intent", "committed"),
    ]


def test_the_same_call_id_with_other_arguments_is_an_idempotency_conflict(api, write_tool, session_for):
    session = session_for("u-1")
    invoke(api, "cancel_thing", '{"query": "A"}', session=session)

    body = invoke(api, "cancel_thing", '{"query": "B"}', session=session).json()

    assert body["kind"] == "idempotency_conflict" and body["recoverable"] is False
    assert "call id" in body["hint"]
    assert RUNS["tests.echo"] == 1 and LedgerEntry.objects.count() == 1


def test_a_documented_rejection_is_failed_and_its_replay_is_the_cached_error(api, publish_tool, session_for):
    publish_tool("refuse", side_effect="write", executor_config={"callable": "tests.reject"})
    session = session_for("u-1")

    first = invoke(api, "refuse", '{"query": "A"}', session=session).json()
    replay = invoke(api, "refuse", '{"query": "A"}', session=session).json()

    assert first["kind"] == "business_rule" and first["hint"] == "Look the order up first."
    assert replay["kind"] == "business_rule" and replay["cached"] is True
    assert RUNS["tests.reject"] == 1
    assert LedgerEntry.objects.get().state == LedgerState.FAILED


@pytest.mark.django_db(transaction=True)
def test_a_timeout_leaves_the_outcome_unknown_and_never_invites_a_retry(api, publish_tool):
    publish_tool(
        "slow_write",
        side_effect="write",
        parameters=SLOW_SCHEMA,
        context_bindings={},
        executor_config={"callable": "tests.slow"},
        timeout_s=0.2,
    )

    body = invoke(api, "slow_write", {"sleep_ms": 600}).json()
    replay = invoke(api, "slow_write", {"sleep_ms": 600}).json()

    entry = LedgerEntry.objects.get()
    assert body["kind"] == "timeout" and body["recoverable"] is False
    assert "Do not call again" in body["hint"] and body["execution_id"] == str(entry.pk)
    assert entry.state == LedgerState.UNKNOWN
    assert replay["kind"] == "outcome_unknown" and "Do not call again" in replay["hint"]
    assert RUNS["tests.slow"] == 1


def test_a_crashing_executor_is_internal_with_an_error_id_and_no_exception_text(
    api, publish_tool, session_for
):
    publish_tool("crashy", side_effect="write", executor_config={"callable": "tests.crash"})

    body = invoke(api, "crashy", '{"query": "A"}', session=session_for("u-1")).json()

    assert body["kind"] == "internal" and body["error_id"]
    assert "secret internal detail" not in str(body)
    assert LedgerEntry.objects.get().state == LedgerState.UNKNOWN


def test_a_call_whose_intent_is_still_open_answers_in_progress(api, write_tool, session_for):
    session = session_for("u-1")
    dry = invoke(api, "cancel_thing", '{"query": "A"}', session=session, dry_run=True).json()
    key = dry["data"]["would_run"]["idempotency_key"]
    LedgerEntry.objects.create(
        tenant=write_tool.tool.grants.get().tenant,
        agent=write_tool.tool.grants.get().agent,
        key=key,
        task_id="t-1",
        call_id="call_1",
        tool=write_tool.tool,
        version=write_tool,
        subject="u-1",
        args_hash=dry["data"]["would_run"]["args_hash"],
        arguments={"query": "A", "user_id": "u-1"},
    )

    body = invoke(api, "cancel_thing", '{"query": "A"}', session=session).json()

    assert body["kind"] == "in_progress" and body["retry_after_s"] >= 1
    assert not RUNS


def test_a_refused_write_writes_no_ledger_row(api, write_tool, session_for):
    body = invoke(api, "cancel_thing", '{"query": 5}', session=session_for("u-1")).json()

    assert body["kind"] == "invalid_args"
    assert not LedgerEntry.objects.exists() and not RUNS
