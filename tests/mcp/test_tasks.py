"""MCP tasks on /mcp: an async or approval-gated call answered as a task the client follows.

2026-07-28 (the tasks extension, SEP-2663): the official client follows the task through its
own extension hooks (a `ResultClaim` on `resultType: "task"`, polling with `send_request`);
the SDK 2.3 ships those hooks but no tasks extension and no models for it, so the client-side
models below are written from the SEP. 2025-11-25 (tasks in the core spec): the SDK's
ClientSession validates every tools/call answer as a CallToolResult there, so the
task-augmented call goes over raw HTTP, checked with the SDK's own 2025-11-25 models; the
tasks/* requests that follow go through ClientSession.send_request with those models.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Literal

import anyio
import httpx2
import mcp_types as types
import mcp_types._v2025_11_25 as v2025
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from mcp.client.client import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from apps.gateway.api import mcp_tasks
from apps.gateway.execution import execute_async_entry
from apps.ledger.approvals import approval_decide
from apps.ledger.execution_hooks import entry_execution, register_entry_execution
from apps.ledger.models import Approval, LedgerEntry
from apps.ledger.services import ledger_mark_unknown
from apps.tenancy.models import Agent
from apps.tenancy.services import agent_key_issue

from .test_mcp import run_client

EXTENSION = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"


class _TaskState(types.Result):
    """What SEP-2663's task results share: the task as it stands."""

    task_id: str
    status: types.TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class CreatedTask(_TaskState):
    """SEP-2663's CreateTaskResult, as a client reads it."""

    result_type: Literal["task"]


class DetailedTask(_TaskState):
    """SEP-2663's GetTaskResult: the task, and the result once completed."""

    result_type: Literal["complete"]
    result: dict[str, Any] | None = None


class GetTask(types.Request[types.GetTaskRequestParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: types.GetTaskRequestParams
    name_param = "taskId"  # SEP-2663: tasks/* carry the task id in Mcp-Name


def _follow(seen: list[Any], meanwhile):
    """A resolver that polls tasks/get until the task is terminal; `meanwhile(task_id)` runs in
    a thread after the first poll (what a worker or an operator does meanwhile)."""

    async def resolve(created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        seen.append(created)
        while True:
            task = await ctx.session.send_request(
                GetTask(params=types.GetTaskRequestParams(task_id=created.task_id)), DetailedTask
            )
            seen.append(task)
            if task.status in ("completed", "failed", "cancelled"):
                return types.CallToolResult.model_validate(task.result)
            if len(seen) == 2:
                await anyio.to_thread.run_sync(meanwhile, created.task_id)

    return resolve


class Tasks(ClientExtension):
    """The tasks extension, client side, on the SDK's extension hooks: `mcp.Client` declares it in
    each request's capabilities and hands a `resultType: "task"` answer to the resolver."""

    identifier = EXTENSION

    def __init__(self, seen: list[Any], meanwhile) -> None:
        self.resolve = _follow(seen, meanwhile)

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]


@pytest.fixture(autouse=True)
def deferred_calls_wait_for_the_test() -> Any:
    """The test plays the worker (`meanwhile`): a deferred call's entry is kept for it rather
    than handed to the broker, where a Celery worker another module started for the whole
    session (tests/e2e) would run it first, without this module's tools."""
    registered = entry_execution()
    kept: list[str] = []
    register_entry_execution(dataclasses.replace(registered, enqueue=kept.append))
    yield kept
    register_entry_execution(registered)


def _run_worker(task_id: str) -> None:
    try:
        execute_async_entry(entry_id=task_id)
    finally:
        connection.close()  # a thread of the test's own: its connection would outlive the database


def _approve_and_run(task_id: str) -> None:
    approval_decide(approval=Approval.objects.get(entry_id=task_id), approve=True, actor="admin:olga",
                    note="Customer confirmed.")
    _run_worker(task_id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "tool, fields, meanwhile, waiting",
    [
        ("export_things", {"mode": "async", "side_effect": "write"}, _run_worker, "worker"),
        ("refund", {"side_effect": "write", "approval": {"always": True}}, _approve_and_run, "approval"),
    ],
)
def test_the_sdk_client_follows_a_deferred_call_as_a_task_on_2026_07_28(
    live_server, key, publish_tool, session_for, tool, fields, meanwhile, waiting
):
    publish_tool(tool, **fields)
    headers = {"Authorization": f"Bearer {key}", "X-ToolHub-Session": session_for("u-1001")}
    seen: list[Any] = []

    async def scenario():
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            transport = streamable_http_client(f"{live_server.url}/mcp", http_client=http)
            async with Client(transport, extensions=[Tasks(seen, meanwhile)]) as client:
                result = await client.call_tool(tool, {"query": "A"})
                return client.protocol_version, client.server_capabilities, result

    version, capabilities, result = anyio.run(scenario)

    assert version == MODERN and capabilities.extensions == {EXTENSION: {}}
    created, first, last = seen
    entry = LedgerEntry.objects.get()
    assert created.task_id == first.task_id == str(entry.pk)
    assert (created.status, first.status, last.status) == ("working", "working", "completed")
    assert waiting in first.status_message and first.poll_interval_ms > 0 and first.ttl_ms is None
    # The finished call answers what the synchronous call would have: ToolHub's envelope.
    assert result.is_error is False
    envelope = json.loads(result.content[0].text)
    assert (envelope["status"], envelope["execution_id"]) == ("ok", str(entry.pk))
    assert result.structured_content == envelope
    assert envelope["data"]["echo"]["user_id"] == "u-1001"


@pytest.mark.django_db(transaction=True)
def test_a_client_without_the_extension_gets_the_envelope_as_today(
    live_server, key, publish_tool, session_for
):
    publish_tool("export_things", mode="async", side_effect="write")
    headers = {"Authorization": f"Bearer {key}", "X-ToolHub-Session": session_for("u-1001")}

    async def steps(session: ClientSession):
        await session.discover()
        return await session.call_tool("export_things", {"query": "A"})

    result = run_client(f"{live_server.url}/mcp", headers, steps)

    envelope = json.loads(result.content[0].text)
    assert (result.is_error, envelope["status"]) == (False, "accepted")
    assert envelope["poll"] == f"/api/v1/executions/{LedgerEntry.objects.get().pk}"


@pytest.mark.django_db(transaction=True)
def test_2025_11_25_a_task_augmented_call_is_followed_with_the_sdks_requests(
    live_server, key, publish_tool, session_for
):
    publish_tool("export_things", mode="async", side_effect="write")
    url = f"{live_server.url}/mcp"
    headers = {"Authorization": f"Bearer {key}", "X-ToolHub-Session": session_for("u-1001")}
    session_ids: list[str] = []

    async def on_response(response):
        if "mcp-session-id" in response.headers:
            session_ids.append(response.headers["mcp-session-id"])

    async def steps(session: ClientSession):
        init = await session.initialize()
        listed = await session.list_tools()
        call = {"name": "export_things", "arguments": {"query": "A"}, "task": {"ttl": 60_000}}
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call}
        wire = {"Mcp-Session-Id": session_ids[0], "MCP-Protocol-Version": LEGACY}
        async with httpx2.AsyncClient(headers={**headers, **wire}) as http:
            answer = (await http.post(url, json=body)).json()["result"]
        created = v2025.CreateTaskResult.model_validate(answer)
        task_id = types.GetTaskRequestParams(task_id=created.task.task_id)
        payload = types.GetTaskPayloadRequestParams(task_id=created.task.task_id)
        working = await session.send_request(types.GetTaskRequest(params=task_id), types.GetTaskResult)
        listed_tasks = await session.send_request(types.ListTasksRequest(), types.ListTasksResult)
        await anyio.to_thread.run_sync(_run_worker, created.task.task_id)
        done = await session.send_request(types.GetTaskRequest(params=task_id), types.GetTaskResult)
        result = await session.send_request(types.GetTaskPayloadRequest(params=payload), types.CallToolResult)
        return init, listed, answer, created, working, listed_tasks, done, result

    init, listed, answer, created, working, listed_tasks, done, result = run_client(
        url, headers, steps, on_response=on_response
    )

    tasks = init.capabilities.tasks
    assert tasks.requests.tools.call is not None and tasks.list is not None
    assert tasks.cancel is None  # refused, so not declared
    assert {t.name: t.execution.task_support for t in listed.tools} == {
        "export_things": "optional", "request_capability": "optional"
    }
    entry = LedgerEntry.objects.get()
    assert (created.task.task_id, created.task.status, created.task.ttl) == (str(entry.pk), "working", None)
    accepted = json.loads(answer["_meta"]["io.modelcontextprotocol/model-immediate-response"])
    assert accepted["status"] == "accepted"
    assert (working.status, working.poll_interval) == ("working", mcp_tasks.POLL_MS["accepted"])
    assert [t.task_id for t in listed_tasks.tasks] == [str(entry.pk)]
    assert done.status == "completed"
    envelope = json.loads(result.content[0].text)
    assert (result.is_error, envelope["status"], envelope["execution_id"]) == (False, "ok", str(entry.pk))
    assert result.meta == {"io.modelcontextprotocol/related-task": {"taskId": str(entry.pk)}}


# The edges, over the Django test client: another agent's task, cancel, a client that asks for
# no task, a finished call, an unfinished tasks/result.


def _rpc(client, method, params, *, key, headers=None, rpc_id=1):
    body = {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}
    return client.post(
        "/mcp", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}",
        **(headers or {}),
    )


def _legacy_session(client, key, session) -> dict[str, str]:
    init = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    session_id = _rpc(client, "initialize", init, key=key)["Mcp-Session-Id"]
    return {"HTTP_MCP_SESSION_ID": session_id, "HTTP_MCP_PROTOCOL_VERSION": LEGACY,
            "HTTP_X_TOOLHUB_SESSION": session}


def _modern(method: str, params: dict[str, Any], *, extension: bool = True, name: str | None = None):
    capabilities = {"extensions": {EXTENSION: {}}} if extension else {}
    meta = {types.PROTOCOL_VERSION_META_KEY: MODERN, types.CLIENT_CAPABILITIES_META_KEY: capabilities}
    headers = {"HTTP_MCP_PROTOCOL_VERSION": MODERN, "HTTP_MCP_METHOD": method}
    if name is not None:
        headers["HTTP_MCP_NAME"] = name
    return {**params, "_meta": meta}, headers


@pytest.mark.django_db
def test_a_task_is_its_agents_own_and_cannot_be_cancelled(client, agent, key, publish_tool, session_for):
    # given: a task of this agent, waiting for an operator's approval
    publish_tool("refund", side_effect="write", approval={"always": True})
    params, headers = _modern("tools/call", {"name": "refund", "arguments": {"query": "A"}}, name="refund")
    headers["HTTP_X_TOOLHUB_SESSION"] = session_for("u-1001")
    created = _rpc(client, "tools/call", params, key=key, headers=headers).json()["result"]
    assert (created["resultType"], created["status"]) == ("task", "working")
    task_id = created["taskId"]
    other_agent = Agent.objects.create(tenant=agent.tenant, name="other")
    other_key = agent_key_issue(agent=other_agent).secret

    def ask(method, *, as_key=key, name=task_id):
        params, headers = _modern(method, {"taskId": task_id}, name=name)
        return _rpc(client, method, params, key=as_key, headers=headers)

    # when / then: another agent of the same tenant is told there is no such task
    theirs = ask("tasks/get", as_key=other_key)
    assert theirs.json()["error"]["code"] == types.INVALID_PARAMS
    assert "No task" in theirs.json()["error"]["message"] and "refund" not in theirs.content.decode()
    # the Mcp-Name header must name the task
    assert ask("tasks/get", name="another").json()["error"]["code"] == types.HEADER_MISMATCH
    # cancel is refused, saying why; nothing changes
    cancel = ask("tasks/cancel").json()["error"]
    assert cancel["code"] == types.INVALID_PARAMS and "does not cancel" in cancel["message"]
    assert Approval.objects.get().status == "pending"
    # no tasks/result on 2026-07-28: a finished task's tasks/get carries the result
    assert ask("tasks/result").json()["error"]["code"] == types.METHOD_NOT_FOUND
    # tasks/update is acked: ToolHub never asks the client for input
    assert ask("tasks/update").json()["result"]["resultType"] == "complete"
    mine = ask("tasks/get").json()["result"]
    assert (mine["status"], mine["ttlMs"], "result" in mine) == ("working", None, False)
    assert "approval" in mine["statusMessage"]


@pytest.mark.django_db
def test_a_call_that_finished_at_once_answers_its_result_even_when_a_task_was_asked_for(
    client, key, publish_tool, session_for
):
    publish_tool("cancel_thing", side_effect="write")
    headers = _legacy_session(client, key, session_for("u-1001"))

    call = {"name": "cancel_thing", "arguments": {"query": "A"}, "task": {"ttl": 1000}}
    result = _rpc(client, "tools/call", call, key=key, headers=headers).json()["result"]

    assert v2025.CallToolResult.model_validate(result).is_error is False
    assert json.loads(result["content"][0]["text"])["status"] == "ok"
    listed = _rpc(client, "tasks/list", {}, key=key, headers=headers).json()["result"]
    assert listed == {"tasks": []}


@pytest.mark.django_db
def test_2025_11_25_an_unfinished_task_result_says_to_poll_and_a_rejected_call_fails(
    client, key, publish_tool, session_for, monkeypatch
):
    monkeypatch.setattr(mcp_tasks, "RESULT_WAIT_S", 0)
    publish_tool("refund", side_effect="write", approval={"always": True})
    headers = _legacy_session(client, key, session_for("u-1001"))
    call = {"name": "refund", "arguments": {"query": "A"}, "task": {}}
    task_id = _rpc(client, "tools/call", call, key=key, headers=headers).json()["result"]["task"]["taskId"]

    early = _rpc(client, "tasks/result", {"taskId": task_id}, key=key, headers=headers).json()["error"]
    approval_decide(approval=Approval.objects.get(), approve=False, actor="admin:olga", note="Not today.")
    got = _rpc(client, "tasks/get", {"taskId": task_id}, key=key, headers=headers).json()["result"]
    result = _rpc(client, "tasks/result", {"taskId": task_id}, key=key, headers=headers).json()["result"]
    cancel = _rpc(client, "tasks/cancel", {"taskId": task_id}, key=key, headers=headers).json()["error"]

    assert early["code"] == types.INVALID_REQUEST and "poll tasks/get" in early["message"]
    task = v2025.GetTaskResult.model_validate(got)
    assert task.status == "failed"
    assert task.status_message == "An operator rejected this call, so it was not run."
    assert v2025.CallToolResult.model_validate(result).is_error is True
    assert json.loads(result["content"][0]["text"])["kind"] == "forbidden"
    assert cancel["code"] == types.INVALID_PARAMS and "already failed" in cancel["message"]


@pytest.mark.django_db
def test_revisions_before_2025_11_25_have_no_tasks(client, key, publish_tool, session_for):
    publish_tool("export_things", mode="async", side_effect="write")
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    initialized = _rpc(client, "initialize", init, key=key)
    session_id = initialized["Mcp-Session-Id"]
    headers = {"HTTP_MCP_SESSION_ID": session_id, "HTTP_X_TOOLHUB_SESSION": session_for("u")}

    call = {"name": "export_things", "arguments": {"query": "A"}, "task": {}}
    result = _rpc(client, "tools/call", call, key=key, headers=headers).json()["result"]
    listed = _rpc(client, "tools/list", {}, key=key, headers=headers).json()["result"]

    assert "tasks" not in initialized.json()["result"]["capabilities"]
    assert json.loads(result["content"][0]["text"])["status"] == "accepted"
    assert "execution" not in listed["tools"][0]
    missing = _rpc(client, "tasks/get", {"taskId": "x"}, key=key, headers=headers).json()["error"]
    assert missing["code"] == types.METHOD_NOT_FOUND


@pytest.mark.django_db
def test_2025_11_25_an_unknown_outcome_stays_working_and_the_list_pages(
    client, key, publish_tool, session_for, monkeypatch
):
    # given: two accepted calls, the first of which ended with an unknown outcome
    monkeypatch.setattr(mcp_tasks, "PAGE_SIZE", 1)
    publish_tool("export_things", mode="async", side_effect="write")
    headers = _legacy_session(client, key, session_for("u-1001"))
    ids = []
    for rpc_id, query in ((1, "A"), (2, "B")):
        call = {"name": "export_things", "arguments": {"query": query}, "task": {}}
        answer = _rpc(client, "tools/call", call, key=key, headers=headers, rpc_id=rpc_id).json()["result"]
        ids.append(answer["task"]["taskId"])
    ledger_mark_unknown(entry_id=ids[0], actor="sweeper", note="no answer in time")

    # when
    got = _rpc(client, "tasks/get", {"taskId": ids[0]}, key=key, headers=headers).json()["result"]
    first = _rpc(client, "tasks/list", {}, key=key, headers=headers).json()["result"]
    second = _rpc(client, "tasks/list", {"cursor": first["nextCursor"]}, key=key, headers=headers).json()
    forged = _rpc(client, "tasks/list", {"cursor": "x"}, key=key, headers=headers).json()

    # then: not failed, since reconciliation may still settle it either way
    task = v2025.GetTaskResult.model_validate(got)
    assert (task.status, task.poll_interval) == ("working", mcp_tasks.POLL_MS["unknown"])
    assert "do not" in task.status_message.lower()
    # newest first, one a page
    assert [t["taskId"] for t in first["tasks"]] == [ids[1]]
    assert [t["taskId"] for t in second["result"]["tasks"]] == [ids[0]]
    assert "nextCursor" not in second["result"]
    assert forged["error"]["code"] == types.INVALID_PARAMS


@pytest.mark.django_db
def test_2025_11_25_tasks_list_reads_a_page_in_queries_that_do_not_grow_with_its_tasks(
    client, key, publish_tool, session_for
):
    # given: one accepted call and one waiting for approval, then three more of each
    publish_tool("export_things", mode="async", side_effect="write")
    publish_tool("refund", side_effect="write", approval={"always": True})
    headers = _legacy_session(client, key, session_for("u-1001"))
    calls = iter(range(1, 100))

    def call_both() -> None:
        for tool in ("export_things", "refund"):
            rpc_id = next(calls)
            call = {"name": tool, "arguments": {"query": str(rpc_id)}, "task": {}}
            _rpc(client, "tools/call", call, key=key, headers=headers, rpc_id=rpc_id)

    def listed() -> tuple[list[str], int]:
        with CaptureQueriesContext(connection) as queries:
            tasks = _rpc(client, "tasks/list", {}, key=key, headers=headers).json()["result"]["tasks"]
        return [task["status"] for task in tasks], len(queries)

    call_both()
    two, queries_for_two = listed()
    for _ in range(3):
        call_both()
    eight, queries_for_eight = listed()

    # then: every task is listed, and the page costs the same queries however many it holds
    assert (two, eight) == (["working"] * 2, ["working"] * 8)
    assert queries_for_eight == queries_for_two
