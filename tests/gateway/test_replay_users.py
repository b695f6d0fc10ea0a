"""A task and call id replayed by another end user is a conflict, never the first user's result.

Issue 11, item 2: the arguments were hashed before the session filled `user_id`, and a replay
never compared who asks, so u-2002 sending u-1001's task and call ids got u-1001's result.
"""

from __future__ import annotations

import json

import pytest

from apps.gateway.execution import execute_async_entry
from apps.ledger.models import LedgerEntry, LedgerState
from apps.tenancy.services import agent_key_issue
from tests.gateway.callables import RUNS
from tests.gateway.conftest import invoke

pytestmark = pytest.mark.django_db

TASK = "shared-task"


def assert_conflict_without_the_first_users_data(envelope: dict) -> None:
    assert envelope["status"] == "error" and envelope["kind"] == "idempotency_conflict"
    assert envelope["recoverable"] is False
    assert "another end user" in envelope["message"]
    assert "u-1001" not in json.dumps(envelope)


def test_a_read_through_the_ledger_is_not_replayed_to_another_user(api, publish_tool, session_for):
    # given: u-1001's read went through the ledger (the client waits less than the timeout)
    publish_tool("search_things", timeout_s=5.0)
    first = invoke(
        api, "search_things", '{"query": "A"}', session=session_for("u-1001"), task_id=TASK, wait_s=0.05
    ).json()
    execute_async_entry(entry_id=first["execution_id"])  # what the worker does with it

    # when: u-2002 sends the same task, call id and arguments
    second = invoke(
        api, "search_things", '{"query": "A"}', session=session_for("u-2002"), task_id=TASK, wait_s=0.05
    ).json()

    # then
    assert LedgerEntry.objects.get(pk=first["execution_id"]).state == LedgerState.COMMITTED
    assert_conflict_without_the_first_users_data(second)
    assert "execution_id" not in second


def test_a_write_is_not_replayed_to_another_user(api, publish_tool, session_for):
    # given
    publish_tool("cancel_thing", side_effect="write")
    first = invoke(api, "cancel_thing", '{"query": "A"}', session=session_for("u-1001"), task_id=TASK)

    # when
    second = invoke(api, "cancel_thing", '{"query": "A"}', session=session_for("u-2002"), task_id=TASK)

    # then
    assert first.json()["data"]["echo"]["user_id"] == "u-1001"
    assert_conflict_without_the_first_users_data(second.json())
    assert RUNS["tests.echo"] == 1
    assert LedgerEntry.objects.get().subject == "u-1001"


def test_the_same_user_sending_the_same_write_again_still_gets_the_stored_result(
    api, publish_tool, session_for
):
    publish_tool("cancel_thing", side_effect="write")
    session = session_for("u-1001")
    first = invoke(api, "cancel_thing", '{"query": "A"}', session=session, task_id=TASK).json()

    again = invoke(api, "cancel_thing", '{"query": "A"}', session=session, task_id=TASK).json()

    assert again["status"] == "ok" and again["cached"] is True and again["data"] == first["data"]
    assert RUNS["tests.echo"] == 1


def test_a_write_of_a_tool_without_bindings_is_not_replayed_to_another_user(api, publish_tool, session_for):
    # given: nothing in the arguments says whose call it is; the session still does
    publish_tool(
        "ping_thing",
        side_effect="write",
        context_bindings={},
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to ping."}},
            "required": ["query"],
            "additionalProperties": False,
        },
    )
    invoke(api, "ping_thing", '{"query": "A"}', session=session_for("u-1001"), task_id=TASK)

    # when
    second = invoke(api, "ping_thing", '{"query": "A"}', session=session_for("u-2002"), task_id=TASK).json()

    # then
    assert second["kind"] == "idempotency_conflict" and "data" not in second
    assert RUNS["tests.echo"] == 1


def test_an_async_call_is_not_replayed_to_another_user(api, publish_tool, session_for):
    # given: u-1001's async call, accepted and then run by a worker
    publish_tool("export_things", mode="async", side_effect="write")
    accepted = invoke(api, "export_things", '{"query": "A"}', session=session_for("u-1001"), task_id=TASK)
    assert accepted.status_code == 202
    execution_id = accepted.json()["execution_id"]
    execute_async_entry(entry_id=execution_id)

    # when
    second = invoke(api, "export_things", '{"query": "A"}', session=session_for("u-2002"), task_id=TASK)

    # then: no result, and no execution id to poll u-1001's result with
    assert second.status_code == 200
    assert_conflict_without_the_first_users_data(second.json())
    assert execution_id not in second.content.decode()
    assert RUNS["tests.echo"] == 1


def _mcp(client, method, params, *, key, rpc_id, **headers):
    body = {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}
    return client.post(
        "/mcp", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}",
        **headers,
    )


def test_an_mcp_call_with_the_same_task_header_is_not_replayed_to_another_user(
    client, agent, publish_tool, session_for
):
    # given: one MCP connection of the agent's backend, used for two end users in one task
    publish_tool("cancel_thing", side_effect="write")
    key = agent_key_issue(agent=agent).secret
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    session_id = _mcp(client, "initialize", init, key=key, rpc_id=0)["Mcp-Session-Id"]
    connection = {"HTTP_MCP_SESSION_ID": session_id}
    call = {"name": "cancel_thing", "arguments": {"query": "A"}}
    first = _mcp(
        client, "tools/call", call, key=key, rpc_id=1, HTTP_X_TOOLHUB_TASK=TASK,
        HTTP_X_TOOLHUB_SESSION=session_for("u-1001"), **connection,
    ).json()["result"]

    # when
    second = _mcp(
        client, "tools/call", call, key=key, rpc_id=1, HTTP_X_TOOLHUB_TASK=TASK,
        HTTP_X_TOOLHUB_SESSION=session_for("u-2002"), **connection,
    ).json()["result"]

    # then
    assert first["isError"] is False and first["structuredContent"]["data"]["echo"]["user_id"] == "u-1001"
    assert second["isError"] is True
    assert_conflict_without_the_first_users_data(second["structuredContent"])
    assert RUNS["tests.echo"] == 1
