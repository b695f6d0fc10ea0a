"""A write to an MCP server whose outcome is unknown is settled through the server's status
tool, asked with the idempotency key the write carried; without a status tool it waits in the
triage queue. The server runs as a real process, killed mid-call and started again with the
bookings it had recorded."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.gateway.reconciliation import ledger_reconcile_entry
from apps.ledger.models import LedgerEntry, LedgerState
from tests.gateway.conftest import invoke
from tests.gateway.mcp_tools import SECRET, mcp_tool, register
from tests.mcp_upstream import McpUpstream, UpstreamProcess, free_port, mcp_upstream, mcp_upstream_process

pytestmark = pytest.mark.django_db

KEYED = {"idempotency_argument": "idempotency_key"}


@pytest.fixture
def shipping() -> Iterator[McpUpstream]:
    with mcp_upstream() as running:
        yield running


def kill_once_recorded(server: UpstreamProcess, state_file: Path, field: str) -> threading.Thread:
    """Kill the server as soon as its state file's `field` ("asked", "booked") holds something."""

    def watch() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if state_file.exists() and json.loads(state_file.read_text())[field]:
                server.kill()
                return
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def booking_killed_mid_call(api, agent, tmp_path: Path, *, killed_once: str, status_tool: str = ""):
    """schedule_pickup through ToolHub, its server killed once the call was `killed_once`
    ("asked": arrived, not booked; "booked": recorded, not answered). Returns the envelope,
    the entry, and the port and state file to start the server again with."""
    port, state_file = free_port(), tmp_path / "shipping.json"
    delays = {"asked": {"pickup_delay_s": 30}, "booked": {"answer_delay_s": 30}}[killed_once]
    with mcp_upstream_process(port, state_file, **delays) as server:
        register(agent, server.url, status_tool=status_tool)
        mcp_tool(agent, "schedule_pickup", side_effect="write", timeout_s=8, **KEYED)
        watcher = kill_once_recorded(server, state_file, killed_once)
        body = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()
        watcher.join()
    return body, LedgerEntry.objects.get(), port, state_file


def _requests_settled(shipping: McpUpstream) -> int:
    """The server's request count once it stops growing: after a timeout the client still
    sends a `notifications/cancelled` in the background, which is no question about the write."""
    count = len(shipping.authorizations)
    for _ in range(30):
        time.sleep(0.2)
        if len(shipping.authorizations) == count:
            return count
        count = len(shipping.authorizations)
    return count


def test_a_write_carries_the_ledgers_key_in_its_idempotency_argument(api, agent, shipping):
    # given
    register(agent, shipping.url)
    mcp_tool(agent, "schedule_pickup", side_effect="write", **KEYED)

    # when
    body = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()

    # then
    entry = LedgerEntry.objects.get()
    assert body["status"] == "ok" and entry.state == LedgerState.COMMITTED
    assert list(shipping.booked) == [entry.key]
    assert shipping.booked[entry.key] == body["data"] == {"pickup_id": "pu-1", "shipment_id": "s-1"}


def test_a_write_whose_server_died_after_booking_is_committed_through_the_status_tool(api, agent, tmp_path):
    # given: the server recorded the pickup, then died before answering
    body, entry, port, state_file = booking_killed_mid_call(
        api, agent, tmp_path, killed_once="booked", status_tool="pickup_status"
    )
    assert (body["status"], body["kind"]) == ("error", "upstream_error"), body
    assert entry.state == LedgerState.UNKNOWN
    assert body["hint"].startswith("The outcome is unknown and is being checked")
    assert "Do not call again" in body["hint"]
    assert body["poll"] == f"/api/v1/executions/{entry.pk}"

    # when: it is started again, with what it booked, and the reconciler asks it
    with mcp_upstream_process(port, state_file):
        state = ledger_reconcile_entry(entry_id=entry.pk)
        replay = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()

    # then: committed with the booking the server made, which a replay answers; one pickup
    assert state == LedgerState.COMMITTED
    assert (replay["status"], replay["cached"]) == ("ok", True)
    assert replay["data"] == {"pickup_id": "pu-1", "shipment_id": "s-1"}
    assert json.loads(state_file.read_text())["pickups"] == ["s-1"]
    assert entry.reconcile_attempts.get().answer == "found"


def test_a_write_whose_server_died_before_booking_fails_through_the_status_tool(api, agent, tmp_path):
    # given: the call reached the server, which died before booking anything
    body, entry, port, state_file = booking_killed_mid_call(
        api, agent, tmp_path, killed_once="asked", status_tool="pickup_status"
    )
    assert entry.state == LedgerState.UNKNOWN

    # when
    with mcp_upstream_process(port, state_file):
        state = ledger_reconcile_entry(entry_id=entry.pk)
    replay = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()

    # then: certainly not applied, and the model reads that nothing happened
    assert state == LedgerState.FAILED
    assert (replay["status"], replay["cached"]) == ("error", True)
    assert "not applied" in replay["message"] and "Nothing happened" in replay["hint"]
    assert json.loads(state_file.read_text())["pickups"] == []


def test_without_a_status_tool_an_unknown_write_goes_to_triage(api, agent, tmp_path):
    # given
    body, entry, port, state_file = booking_killed_mid_call(api, agent, tmp_path, killed_once="booked")
    assert entry.state == LedgerState.UNKNOWN

    # when: the server is back, but names no status tool to ask
    with mcp_upstream_process(port, state_file):
        state = ledger_reconcile_entry(entry_id=entry.pk)

    # then: an operator settles it
    entry.refresh_from_db()
    assert state == LedgerState.UNKNOWN
    assert entry.triage_since is not None and entry.next_check_at is None
    assert "names no status tool" in entry.reconcile_attempts.get().note


def test_an_answer_without_found_settles_nothing_and_is_asked_again(api, agent, shipping):
    # given: a write that timed out, and a status tool answering in another shape
    register(agent, shipping.url, status_tool="vague_status")
    mcp_tool(agent, "schedule_pickup", side_effect="write", timeout_s=0.5, **KEYED)
    shipping.pickup_delay_s = 1.0
    assert invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()["kind"] == "timeout"
    entry = LedgerEntry.objects.get()

    # when
    state = ledger_reconcile_entry(entry_id=entry.pk)

    # then: unclear, checked again later, asked with the upstream's credential
    entry.refresh_from_db()
    assert state == LedgerState.UNKNOWN
    assert entry.triage_since is None and entry.next_check_at is not None
    attempt = entry.reconcile_attempts.get()
    assert attempt.answer == "unclear" and 'without a boolean "found"' in attempt.note
    assert set(shipping.authorizations) == {f"Bearer {SECRET}"}


def test_a_write_that_sends_no_key_cannot_be_asked_about(api, agent, shipping):
    # given: a status tool, but a version that does not put the key in the write
    register(agent, shipping.url, status_tool="pickup_status")
    mcp_tool(agent, "schedule_pickup", side_effect="write", timeout_s=1.0)
    shipping.pickup_delay_s = 2.0
    invoke(api, "schedule_pickup", {"shipment_id": "s-1"})
    entry = LedgerEntry.objects.get()
    assert entry.state == LedgerState.UNKNOWN
    posts = _requests_settled(shipping)

    # when
    ledger_reconcile_entry(entry_id=entry.pk)

    # then: straight to triage, and the server was not asked
    entry.refresh_from_db()
    assert entry.triage_since is not None
    assert "idempotency_argument" in entry.reconcile_attempts.get().note
    assert len(shipping.authorizations) == posts


def test_the_egress_policy_refuses_asking_the_status_tool(api, agent, shipping, settings):
    # given
    register(agent, shipping.url, status_tool="pickup_status")
    mcp_tool(agent, "schedule_pickup", side_effect="write", timeout_s=1.0, **KEYED)
    shipping.pickup_delay_s = 2.0
    invoke(api, "schedule_pickup", {"shipment_id": "s-1"})
    entry = LedgerEntry.objects.get()
    assert entry.state == LedgerState.UNKNOWN
    posts = _requests_settled(shipping)
    settings.TOOLHUB_EGRESS_ALLOW = []

    # when
    ledger_reconcile_entry(entry_id=entry.pk)

    # then
    entry.refresh_from_db()
    assert entry.triage_since is not None
    assert entry.reconcile_attempts.get().note.startswith("not asked:")
    assert len(shipping.authorizations) == posts
