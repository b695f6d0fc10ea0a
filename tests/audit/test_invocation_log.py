"""The invocation log keeps every field of every row it is given, however it writes them."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from apps.audit import invocation_log
from apps.audit.models import Invocation
from apps.common import db
from tests.factories import AgentFactory

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
