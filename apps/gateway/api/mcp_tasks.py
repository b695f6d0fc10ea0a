"""MCP tasks on `/mcp`: an accepted (async) or approval-gated call answered as a task that the
client follows, where the client says it takes one; today's envelope otherwise.

A task is an execution: its id is the ledger entry's, and `tasks/get` reads what
`GET /api/v1/executions/{id}` reads (the same selector and renderer), so the two never
disagree. Only this agent's calls that a worker runs are its tasks: another agent's id, or
the id of a call that answered at once, is "not found", never a leak.

Two wires, one idea:
- 2025-11-25 (tasks in the core spec, types only in the SDK): the client asks per call with
  `params.task`; `initialize` declares `capabilities.tasks` (`list`, `requests.tools.call`) and
  every listed tool says `execution.taskSupport: "optional"`, since any call may be gated by a
  tenant's approval policy. `tasks/get`, `tasks/result`, `tasks/list`; an isError result is
  `failed`, as that revision says.
- 2026-07-28 (the tasks extension, SEP-2663, `io.modelcontextprotocol/tasks`; the SDK 2.3 has
  no models for it, so `ModernTask` is written from the SEP): the client declares the
  extension in each request's capabilities, `server/discover` declares it, the call answers
  `resultType: "task"`; `tasks/get` carries the finished `result`, `tasks/update` is acked
  (ToolHub never asks the client for input), there is no `tasks/result` nor `tasks/list`.

Decided here, the same on both wires: only a deferred call becomes a task (the server decides,
as SEP-2663 has it; one that finished at once answers its result at once). Waiting for an
operator's approval is `working` with a status message, not `input_required`: that status
asks the client for input (via `tasks/result` or `inputRequests`), and the client has none to
give. An `unknown` outcome is `working` too: reconciliation may still settle it either way,
and a terminal status cannot change. `tasks/cancel` is refused, saying why: a call ToolHub has
accepted runs at most once and is followed to its outcome. `ttl` is null (unlimited): the
ledger keeps its entries.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import mcp_types as types
import mcp_types._v2025_11_25 as legacy_wire
from django.core import signing
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types import methods as surfaces
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from apps.gateway.replies import envelope_text, execution_envelope
from apps.gateway.tool_exports import mcp_structured_content
from apps.ledger.models import LedgerEntry, LedgerState
from apps.ledger.selectors import ledger_entries_run_async, ledger_entry_get
from apps.tenancy.authentication import AgentPrincipal

from .mcp_wire import McpError, Shaped

LEGACY = "2025-11-25"
EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK_META_KEY = "io.modelcontextprotocol/related-task"
IMMEDIATE_RESPONSE_META_KEY = "io.modelcontextprotocol/model-immediate-response"
DEFERRED = ("accepted", "pending_approval")
# How often to ask again: a worker's run is seconds, a person's decision minutes, and an
# unknown outcome waits for reconciliation's backoff or an operator.
POLL_MS = {"accepted": 2_000, "pending_approval": 30_000, "unknown": 60_000}
# How long 2025-11-25's tasks/result holds the request for an unfinished task. That revision
# says to block until the end, but a sync worker cannot wait for an operator: past this, the
# answer says to poll tasks/get.
RESULT_WAIT_S = 5.0
PAGE_SIZE = 50
_CURSOR_SALT = "toolhub.mcp.tasks.cursor.v1"


class ModernTask(types.Result):
    """A task on the 2026-07-28 wire (SEP-2663's `Task`, `CreateTaskResult` and `GetTaskResult`)."""

    result_type: str = "complete"
    task_id: str
    status: types.TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None


@dataclass(frozen=True)
class TaskScope:
    """Who follows tasks, and through which endpoint (the toolset and phase of `/mcp`'s URL)."""

    principal: AgentPrincipal
    version: str
    toolset: str | None
    phase: str | None


@dataclass(frozen=True)
class _State:
    task: types.Task
    envelope: dict[str, Any]

    @property
    def finished(self) -> bool:
        return self.task.status in ("completed", "failed", "cancelled")


def capabilities(version: str) -> types.ServerCapabilities:
    """What `/mcp` can do on `version`: tools, and tasks on the revisions that have them."""
    tools = types.ToolsCapability(list_changed=False)
    if version == LEGACY:
        call = types.TasksToolsCapability(call=types.TasksCallCapability())
        requests = types.ServerTasksRequestsCapability(tools=call)
        tasks = types.ServerTasksCapability(list=types.TasksListCapability(), requests=requests)
        return types.ServerCapabilities(tools=tools, tasks=tasks)
    if version in MODERN_PROTOCOL_VERSIONS:
        return types.ServerCapabilities(tools=tools, extensions={EXTENSION: {}})
    return types.ServerCapabilities(tools=tools)


def listed(tools: list[types.Tool], version: str) -> list[types.Tool]:
    """The tools as listed on `version`: on 2025-11-25 each may be called as a task."""
    if version != LEGACY:
        return tools
    optional = types.ToolExecution(task_support="optional")
    return [tool.model_copy(update={"execution": optional}) for tool in tools]


def declared(
    version: str, call: types.CallToolRequestParams, client: types.ClientCapabilities | None
) -> bool:
    """Whether the client takes a task for this call: per call on 2025-11-25 (`params.task`),
    by the extension in the request's capabilities on 2026-07-28."""
    if version == LEGACY:
        return call.task is not None
    extensions = (client.extensions if client is not None else None) or {}
    return version in MODERN_PROTOCOL_VERSIONS and EXTENSION in extensions


def call_tool_result(
    envelope: dict[str, Any], principal: AgentPrincipal, toolset: str | None, phase: str | None
) -> types.CallToolResult:
    """The envelope as `tools/call` answers it: JSON text, structuredContent, isError on errors."""
    return types.CallToolResult.model_validate(call_tool_wire(envelope, principal, toolset, phase))


def call_tool_wire(
    envelope: dict[str, Any], principal: AgentPrincipal, toolset: str | None, phase: str | None
) -> dict[str, Any]:
    """`call_tool_result` on the handshake revisions' wire (all of them answer tools/call in
    2025-11-25's schema): the dict the SDK's serialize_server_result gives for it, built
    without the models, whose validations and dumps cost three times as much per call."""
    wire: dict[str, Any] = {
        "content": [{"text": envelope_text(envelope), "type": "text"}],
        "isError": envelope["status"] == "error",
    }
    structured = mcp_structured_content(envelope, principal, toolset, phase)
    if structured is not None:
        # What the SDK's JSON dump makes of any value (a Decimal, a datetime, NaN).
        wire["structuredContent"] = to_jsonable_python(structured, inf_nan_mode="null")
    return wire


def created(envelope: dict[str, Any], scope: TaskScope) -> Shaped | None:
    """The task a deferred call answers with; None for a call that finished (it answers at once)."""
    if envelope["status"] not in DEFERRED:
        return None
    entry = ledger_entry_get(tenant_id=scope.principal.tenant_id, pk=envelope["execution_id"])
    assert entry is not None  # recorded before the envelope was rendered
    state = _state(entry, scope)
    if scope.version == LEGACY:
        # ToolHub's envelope (the poll path, the approval) as what the model reads meanwhile.
        meta = {IMMEDIATE_RESPONSE_META_KEY: envelope_text(envelope)}
        return _legacy(legacy_wire.CreateTaskResult, {"task": _legacy_task(state.task), "_meta": meta})
    return Shaped(wire=_modern_task(state, scope, result_type="task"))


_LEGACY_METHODS = ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel")
# SEP-2663: no tasks/result (a finished task's tasks/get carries it), no tasks/list.
_MODERN_METHODS = ("tasks/get", "tasks/update", "tasks/cancel")


def serve(method: str, params: dict[str, Any] | None, scope: TaskScope, headers: Mapping[str, str]) -> Shaped:
    """One `tasks/*` request of this agent."""
    modern = scope.version in MODERN_PROTOCOL_VERSIONS
    served = _MODERN_METHODS if modern else _LEGACY_METHODS if scope.version == LEGACY else ()
    if method not in served:
        raise McpError(types.METHOD_NOT_FOUND, f"Method not found: {method[:100]} on {scope.version}.")
    if method == "tasks/list":
        return _list(params, scope)
    task_id = _task_id(params)
    if modern and decode_header_value(headers.get(MCP_NAME_HEADER)) != task_id:
        raise McpError(
            types.HEADER_MISMATCH, f"{MCP_NAME_HEADER} header does not match the request body's 'taskId'"
        )
    state = _state(_entry(task_id, scope), scope)
    if method == "tasks/cancel":
        raise McpError(types.INVALID_PARAMS, _not_cancellable(state))
    if method == "tasks/update":
        return Shaped(wire={})  # no input is ever asked for: whatever is sent answers nothing
    if method == "tasks/result":
        return _result(task_id, state, scope)
    if modern:
        return Shaped(wire=_modern_task(state, scope, result_type="complete"))
    return _legacy(legacy_wire.GetTaskResult, _legacy_task(state.task))


def _task_id(params: dict[str, Any] | None) -> str:
    try:
        return types.GetTaskRequestParams.model_validate(params or {}).task_id
    except ValidationError:
        raise McpError(types.INVALID_PARAMS, "Send the task's id as params.taskId (a string).") from None


def _entry(task_id: str, scope: TaskScope) -> LedgerEntry:
    try:
        pk = uuid.UUID(task_id)
    except ValueError:
        entry = None
    else:
        entry = ledger_entry_get(tenant_id=scope.principal.tenant_id, pk=pk)
    if entry is None or entry.agent_id != scope.principal.agent_id or not entry.run_async:
        raise McpError(
            types.INVALID_PARAMS,
            f"No task {task_id[:80]!r} exists for this agent. A task id is the taskId a tools/call "
            "answered with; a call that answered at once has no task.",
        )
    return entry


def _state(entry: LedgerEntry, scope: TaskScope) -> _State:
    envelope = execution_envelope(entry=entry)
    status: types.TaskStatus = "completed"
    message: str | None = None
    poll: int | None = None
    if envelope["status"] == "pending_approval":
        status, poll = "working", POLL_MS["pending_approval"]
        message = (
            "Waiting for an operator's approval: nothing has run yet. There is nothing to send; "
            "an operator approves or rejects the call."
        )
    elif envelope["status"] == "accepted":
        status, poll, message = "working", POLL_MS["accepted"], "Accepted: a ToolHub worker runs this call."
    elif entry.state == LedgerState.UNKNOWN:
        status, poll = "working", POLL_MS["unknown"]
        message = f"{envelope['message']} {envelope['hint']}"
    elif envelope["status"] == "error":
        status = "failed" if scope.version == LEGACY else "completed"
        message = envelope.get("message")
    task = types.Task(
        task_id=str(entry.pk),
        status=status,
        status_message=message,
        created_at=_iso(entry.created_at),
        last_updated_at=_iso(entry.updated_at),
        ttl=None,
        poll_interval=poll,
    )
    return _State(task=task, envelope=envelope)


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def _not_cancellable(state: _State) -> str:
    if state.finished:
        return f"The task is already {state.task.status}: a finished task cannot be cancelled."
    return (
        "ToolHub does not cancel a call it has accepted: it runs at most once and is followed to its "
        "outcome (one waiting for approval is approved or rejected by an operator). Follow it with "
        "tasks/get; to undo a write, call the tool that reverses it once this one is done."
    )


def _result(task_id: str, state: _State, scope: TaskScope) -> Shaped:
    """2025-11-25's tasks/result: the finished call's CallToolResult, after a short wait at most."""
    deadline = time.monotonic() + RESULT_WAIT_S
    while not state.finished and time.monotonic() < deadline:
        time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))
        state = _state(_entry(task_id, scope), scope)
    if not state.finished:
        raise McpError(
            types.INVALID_REQUEST,
            f"The task is not finished ({state.task.status_message}) ToolHub does not hold a request "
            f"open for it: poll tasks/get every {state.task.poll_interval} ms, then ask tasks/result.",
        )
    wire = call_tool_wire(state.envelope, scope.principal, scope.toolset, scope.phase)
    return Shaped(wire={**wire, "_meta": {RELATED_TASK_META_KEY: {"taskId": task_id}}})


def _list(params: dict[str, Any] | None, scope: TaskScope) -> Shaped:
    try:
        cursor = types.PaginatedRequestParams.model_validate(params or {}).cursor
        before = _cursor_position(cursor) if cursor else None
    except (ValidationError, signing.BadSignature, KeyError, TypeError, ValueError):
        raise McpError(types.INVALID_PARAMS, "Invalid cursor: send an answer's nextCursor.") from None
    principal = scope.principal
    entries = ledger_entries_run_async(
        tenant_id=principal.tenant_id, agent_id=principal.agent_id, before=before, limit=PAGE_SIZE + 1
    )
    page = entries[:PAGE_SIZE]
    wire: dict[str, Any] = {"tasks": [_legacy_task(_state(entry, scope).task) for entry in page]}
    if len(entries) > PAGE_SIZE:
        last = page[-1]
        position = {"t": last.created_at.isoformat(), "i": str(last.pk)}
        wire["nextCursor"] = signing.dumps(position, salt=_CURSOR_SALT)
    return _legacy(legacy_wire.ListTasksResult, wire)


def _cursor_position(cursor: str) -> tuple[datetime, uuid.UUID]:
    position = signing.loads(cursor, salt=_CURSOR_SALT)
    return datetime.fromisoformat(position["t"]), uuid.UUID(position["i"])


def _legacy_task(task: types.Task) -> dict[str, Any]:
    # `ttl` is required and null means unlimited: exclude_none must not drop it.
    return {**task.model_dump(by_alias=True, mode="json", exclude_none=True), "ttl": task.ttl}


def _legacy(model: type[BaseModel], wire: dict[str, Any]) -> Shaped:
    """A 2025-11-25 result, checked against the revision's own schema as the SDK models it."""
    model.model_validate(wire)
    return Shaped(wire=wire)


def _modern_task(state: _State, scope: TaskScope, *, result_type: str) -> dict[str, Any]:
    result = None
    if state.finished:
        call = call_tool_result(state.envelope, scope.principal, scope.toolset, scope.phase)
        result = surfaces.serialize_server_result(
            "tools/call", scope.version, call.model_dump(by_alias=True, mode="json", exclude_none=True)
        )
        result.setdefault("resultType", "complete")
    task = state.task
    modern = ModernTask(
        result_type=result_type,
        task_id=task.task_id,
        status=task.status,
        status_message=task.status_message,
        created_at=task.created_at,
        last_updated_at=task.last_updated_at,
        poll_interval_ms=task.poll_interval,
        result=result,
    )
    return {**modern.model_dump(by_alias=True, mode="json", exclude_none=True), "ttlMs": task.ttl}
