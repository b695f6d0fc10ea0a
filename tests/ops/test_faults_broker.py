"""The broker down: calls that run in the request keep working; calls that need a worker
answer 503 at once, run nothing, and leave no ledger row waiting in `intent`."""

from __future__ import annotations

import time

from apps.ledger.models import LedgerEntry, LedgerState
from tests.gateway.callables import RUNS
from tests.gateway.conftest import invoke

FAST_S = 3.0


def test_sync_reads_and_writes_keep_working_without_a_broker(api, publish_tool, session_for, broker_down):
    publish_tool("lookup")
    publish_tool("note_down", side_effect="write")
    session = session_for("u-1")

    read = invoke(api, "lookup", {"query": "a"}, session=session, call_id="c1")
    write = invoke(api, "note_down", {"query": "b"}, session=session, call_id="c2")

    assert read.status_code == 200 and read.json()["status"] == "ok"
    assert write.status_code == 200 and write.json()["status"] == "ok"
    assert LedgerEntry.objects.get().state == LedgerState.COMMITTED
    assert RUNS["tests.echo"] == 2


def test_an_async_call_without_a_broker_answers_503_fast_and_runs_nothing(
    api, publish_tool, session_for, broker_down
):
    publish_tool("export_report", side_effect="write", mode="async")

    started = time.monotonic()
    response = invoke(api, "export_report", {"query": "a"}, session=session_for("u-1"))
    elapsed = time.monotonic() - started

    body = response.json()
    entry = LedgerEntry.objects.get()
    assert response.status_code == 503 and elapsed < FAST_S
    assert body["status"] == "error" and body["kind"] == "unavailable" and body["recoverable"] is False
    assert "task queue" in body["message"] and "Nothing happened" in body["hint"]
    assert response["Retry-After"] == "30"
    assert entry.state == LedgerState.FAILED and not RUNS


def test_a_short_wait_that_needs_a_worker_also_answers_503(api, publish_tool, session_for, broker_down):
    publish_tool("slow_lookup", executor_config={"callable": "tests.slow"}, timeout_s=5.0)

    response = invoke(api, "slow_lookup", {"query": "a"}, session=session_for("u-1"), wait_s=0.5)

    assert response.status_code == 503 and response.json()["kind"] == "unavailable"
    assert LedgerEntry.objects.get().state == LedgerState.FAILED and not RUNS


def test_readyz_says_the_broker_is_down_and_healthz_stays_up(client, db, broker_down):
    ready, alive = client.get("/readyz"), client.get("/healthz")

    assert ready.status_code == 503 and ready.json()["checks"] == {"database": True, "broker": False}
    assert alive.status_code == 200
