"""The invocation log keeps every field of every row it is given, however it writes them."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from apps.audit import invocation_log
from apps.audit.models import Invocation
from apps.common import db
from apps.gateway.executors.base import ExecutionRequest, tool_callable
from tests.factories import AgentFactory
from tests.ops.test_metrics import scrape, value

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["copy", "bulk_create"])
def write_path(request, monkeypatch) -> str:
    if request.param == "copy" and connection.vendor != "postgresql":
        pytest.fail("COPY is PostgreSQL's; run the suite on PostgreSQL")
    monkeypatch.setattr(db, "one_statement_writes", lambda: request.param == "copy")
    return request.param


def log_line(agent, n: int, **fields) -> dict:
    return {
        "tenant_id": agent.tenant_id,
        "agent_id": agent.pk,
        "task_id": f"task-{n}",
        "call_id": f"call-{n}",
        "tool_name": "search_orders",
        "version_number": 3,
        "status": "ok",
        "latency_ms": 4.25,
        "args_chars": 17,
        "result_chars": 120,
        **fields,
    }


def test_a_batch_written_in_the_background_keeps_every_field(write_path, settings):
    settings.TOOLHUB_INVOCATION_LOG_SYNC = False
    agent = AgentFactory()
    execution_id = uuid.uuid4()
    awkward = {"message": 'Line\n"quoted"\t\\ back, tab, ünïcode, emoji 🙂', "data": [1, None, {"a": True}]}

    for n in range(5):
        invocation_log.invocation_record(**log_line(agent, n))
    invocation_log.invocation_record(
        **log_line(agent, 5, status="error", kind="timeout", execution_id=execution_id, envelope=awkward)
    )
    invocation_log.invocation_record(**log_line(agent, 6, version_number=None, dry_run=True))
    invocation_log.flush()

    rows = {row.call_id: row for row in Invocation.objects.all()}
    assert sorted(rows) == [f"call-{n}" for n in range(7)]
    first = rows["call-0"]
    assert (first.tenant_id, first.agent_id, first.task_id, first.tool_name) == (
        agent.tenant_id, agent.pk, "task-0", "search_orders"
    )
    assert (first.version_number, first.latency_ms) == (3, 4.25)
    assert (first.args_chars, first.result_chars) == (17, 120)
    assert (first.kind, first.execution_id, first.dry_run, first.envelope) == ("", None, False, {})
    assert first.created_at is not None
    failed = rows["call-5"]
    assert (failed.status, failed.kind, failed.execution_id, failed.envelope) == (
        "error", "timeout", execution_id, awkward
    )
    assert (rows["call-6"].version_number, rows["call-6"].dry_run) == (None, True)


@tool_callable("tests.nul_result")
def nul_result(request: ExecutionRequest) -> dict:
    """A result PostgreSQL can store neither in JSON nor in text: it holds NUL."""
    return {"note": "before\u0000after"}


def _envelopes_replaced(samples: dict) -> float:
    return value(samples, "toolhub_invocation_log_failures_total", outcome="envelope_replaced")


def test_a_row_the_database_refuses_costs_only_its_envelope_in_a_background_batch(
    write_path, settings, client, api, publish_tool, session_for
):
    settings.TOOLHUB_INVOCATION_LOG_SYNC = False
    publish_tool("lookup")
    publish_tool("nul_lookup", executor_config={"callable": "tests.nul_result"})
    session = session_for("u-1")
    before = scrape(client)
    calls = [("good-1", "lookup"), ("bad", "nul_lookup"), ("good-2", "lookup")]

    # Within the writer's batching interval of each other: one bulk write holds all three.
    responses = [
        api.post(
            "/api/v1/invoke",
            {"task_id": "t-nul", "call": {"id": call_id, "name": tool, "arguments": {"query": "a"}}},
            format="json",
            HTTP_X_TOOLHUB_SESSION=session,
        )
        for call_id, tool in calls
    ]
    invocation_log.flush()
    after = scrape(client)

    assert [response.json()["status"] for response in responses] == ["ok", "ok", "ok"]
    rows = {row.call_id: row for row in Invocation.objects.filter(task_id="t-nul")}
    assert sorted(rows) == ["bad", "good-1", "good-2"]
    assert rows["good-1"].envelope["status"] == "ok" and rows["good-2"].envelope["data"]
    bad = rows["bad"]
    assert (bad.tool_name, bad.status, bad.kind) == ("nul_lookup", "ok", "")
    assert bad.result_chars > 0
    assert "data" not in bad.envelope
    assert "could not be stored" in bad.envelope["envelope_not_stored"]
    assert _envelopes_replaced(after) - _envelopes_replaced(before) == 1


def test_a_row_the_database_refuses_is_kept_without_its_envelope_when_written_inline(
    settings, client, api, publish_tool, session_for
):
    settings.TOOLHUB_INVOCATION_LOG_SYNC = True
    publish_tool("nul_lookup", executor_config={"callable": "tests.nul_result"})
    before = scrape(client)
    body = {"task_id": "t-inline", "call": {"id": "c1", "name": "nul_lookup", "arguments": {"query": "b"}}}

    response = api.post("/api/v1/invoke", body, format="json", HTTP_X_TOOLHUB_SESSION=session_for("u-1"))
    after = scrape(client)

    assert response.status_code == 200 and response.json()["status"] == "ok"
    row = Invocation.objects.get(task_id="t-inline")
    assert (row.call_id, row.status) == ("c1", "ok")
    assert "could not be stored" in row.envelope["envelope_not_stored"]
    assert _envelopes_replaced(after) - _envelopes_replaced(before) == 1
