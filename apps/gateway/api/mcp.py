"""`/mcp`: the Model Context Protocol over Streamable HTTP: initialize, ping, tools/list, tools/call
on the handshake revisions (2024-11-05 to 2025-11-25); server/discover, tools/list, tools/call
on the stateless revision 2026-07-28 (its envelope in `mcp_modern.py`).

Why not the SDK's server transport: `mcp.server.streamable_http_manager` is a Starlette
(ASGI) app whose session manager needs a task group running for the life of the process.
ToolHub runs under WSGI (gunicorn sync workers), where nothing hosts that loop, and every
tools/call has to go through the synchronous pipeline (invoke_calls) anyway. So this is a
small stateless JSON-RPC handler, but every message is parsed, and every result shaped,
with the SDK's own pydantic types and per-version surfaces (`mcp_types.methods`): what goes
on the wire is exactly what the SDK's client and server expect for the negotiated version.
The one exception, the hot path's, is a handshake revision's tools/call result: built as
the dict those surfaces give (mcp_tasks.call_tool_wire; a test holds the two equal).

Behaviour (Streamable HTTP, JSON response mode):
- POST carries one JSON-RPC message. A request is answered in the body; a notification or
  response gets 202. GET and DELETE answer 405: no server-initiated stream, no state.
- Auth: the agent key as `Authorization: Bearer`; the end user's session token in
  `X-ToolHub-Session`, exactly as on the REST API. Host (and Origin, when sent) must be an
  allowed host, against DNS rebinding. A key this process knows is taken on trust as on REST
  invoke's lean path: tools/call checks it with the task's counters, in their round trip.
- `initialize` returns an `Mcp-Session-Id` that is signed, not stored: it carries the
  agent, the negotiated protocol version and a random id. That id is the default task of
  the connection (loop detection, budgets, write idempotency) unless `X-ToolHub-Task` names
  one; each call's id is `mcp-<session>-<JSON-RPC id>`, unique within the connection.
- `?toolset=&phase=` on the endpoint URL narrow tools/list and tools/call like the REST API.
- tools/call runs through invoke_calls; the envelope comes back as JSON text content and as
  structuredContent (a declared outputSchema's data instead: tool_exports), `isError` on errors.
- 2026-07-28 has no initialize and no session (mcp_modern.py): a request is a connection of
  its own, its random id standing for the session's in its call ids. Its default task is the
  end user's session (a digest of the `X-ToolHub-Session` token), so loop detection and
  budgets still see one user's calls together across requests; `X-ToolHub-Task` names a
  narrower one (a conversation).
- An accepted or approval-gated call answers as a task where the client takes tasks, and
  tasks/* follow it (mcp_tasks.py, on 2025-11-25 and 2026-07-28).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, replace
from typing import Any

import mcp_types as types
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from mcp_types import methods as surfaces
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import BaseModel, ValidationError
from rest_framework.exceptions import AuthenticationFailed

from apps.common import jsontext
from apps.common.errors import InternalError, ToolHubError
from apps.gateway.contracts import ToolCall
from apps.gateway.replies import error_envelope
from apps.gateway.services import InvokeOptions, invoke_calls
from apps.gateway.tool_exports import agent_tool_export
from apps.tenancy.authentication import AgentPrincipal, StaleKey, authenticated_agent, key_confirmed

from . import mcp_modern, mcp_sessions, mcp_tasks
from .mcp_messages import message as read_message
from .mcp_messages import origin_allowed
from .mcp_sessions import SESSION_ID_HEADER, McpSession, session_id
from .mcp_wire import McpError, Shaped
from .mcp_wire import error_response as _error

logger = logging.getLogger("toolhub.mcp")

TASK_HEADER = "X-ToolHub-Task"
TOOLHUB_SESSION_HEADER = "X-ToolHub-Session"

SERVER_INFO = types.Implementation(name="toolhub", title="ToolHub", version="1.0.0")
INSTRUCTIONS = (
    "Every tool call goes through ToolHub's governance. A result is a JSON envelope: status ok or "
    "empty carries data or its meaning; status error says the kind, whether retrying can help "
    "(recoverable), and a hint with what to do next. If no tool fits, call request_capability and "
    "tell the user you cannot do it yet."
)


def _parse(method: str, version: str, params: dict[str, Any] | None) -> Any:
    """The request as the SDK's model for this protocol version."""
    try:
        return surfaces.parse_client_request(method, version, params)
    except KeyError:
        raise McpError(types.METHOD_NOT_FOUND, f"Method not found: {method[:100]}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise McpError(types.INVALID_PARAMS, f"Invalid params for {method}: {problems}") from None


def _shaped(method: str, version: str, result: BaseModel) -> dict[str, Any]:
    """A result as the negotiated version's schema has it (later-version fields dropped)."""
    if isinstance(result, Shaped):
        return result.wire
    return surfaces.serialize_server_result(
        method, version, result.model_dump(by_alias=True, mode="json", exclude_none=True)
    )


@dataclass(frozen=True)
class _Context:
    request: HttpRequest
    principal: AgentPrincipal
    session: McpSession
    # The task of a call that names none in X-ToolHub-Task.
    default_task: str
    # What a 2026-07-28 request says its client can do (the tasks extension, say).
    client: types.ClientCapabilities | None = None

    @property
    def toolset(self) -> str | None:
        return self.request.GET.get("toolset") or None

    @property
    def phase(self) -> str | None:
        return self.request.GET.get("phase") or None

    @property
    def tasks(self) -> mcp_tasks.TaskScope:
        return mcp_tasks.TaskScope(self.principal, self.session.version, self.toolset, self.phase)


def _tools_list(ctx: _Context) -> types.ListToolsResult:
    # No pagination: an agent's tool list is small, so no nextCursor is ever sent.
    try:
        export = agent_tool_export(
            tenant_id=ctx.principal.tenant_id,
            agent_id=ctx.principal.agent_id,
            fmt="mcp",
            toolset=ctx.toolset,
            phase=ctx.phase,
        )
    except ToolHubError as error:
        raise McpError(
            types.INVALID_PARAMS, f"{error.message} {error.hint}", data=error_envelope(error, call_id=None)
        ) from None
    tools = [types.Tool.model_validate(tool) for tool in export.tools]
    return types.ListToolsResult(tools=mcp_tasks.listed(tools, ctx.session.version))


def _tools_call(ctx: _Context, parsed: types.CallToolRequest, rpc_id: types.RequestId) -> BaseModel:
    if hazard := jsontext.text_hazard(parsed.params.name):
        raise McpError(types.INVALID_PARAMS, f"The tool name {hazard.problem}: no tool has such a name.")
    task_id = ctx.request.headers.get(TASK_HEADER) or ctx.default_task
    call = ToolCall(
        call_id=f"mcp-{ctx.session.nonce}-{rpc_id}"[:200],
        name=parsed.params.name,
        arguments=parsed.params.arguments or {},
    )
    envelope = invoke_calls(
        principal=ctx.principal,
        session_token=ctx.request.headers.get(TOOLHUB_SESSION_HEADER),
        options=InvokeOptions(task_id=task_id[:200], toolset=ctx.toolset, phase=ctx.phase),
        calls=[call],
    )[0]
    if mcp_tasks.declared(ctx.session.version, parsed.params, ctx.client):
        if (task := mcp_tasks.created(envelope, ctx.tasks)) is not None:
            return task
    if ctx.session.version in HANDSHAKE_PROTOCOL_VERSIONS:
        return Shaped(wire=mcp_tasks.call_tool_wire(envelope, ctx.principal, ctx.toolset, ctx.phase))
    return mcp_tasks.call_tool_result(envelope, ctx.principal, ctx.toolset, ctx.phase)


def _initialize(principal: AgentPrincipal, message: types.JSONRPCRequest) -> JsonResponse:
    requested = (message.params or {}).get("protocolVersion")
    version = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
    _parse("initialize", version, message.params)
    result = types.InitializeResult(
        protocol_version=version,
        capabilities=mcp_tasks.capabilities(version),
        server_info=SERVER_INFO,
        instructions=INSTRUCTIONS,
    )
    response = _result(message.id, _shaped("initialize", version, result))
    response[SESSION_ID_HEADER] = session_id(principal=principal, version=version)
    return response


def _handle_modern(
    request: HttpRequest, principal: AgentPrincipal, message: types.JSONRPCRequest
) -> JsonResponse:
    """One 2026-07-28 request: its envelope checked, then served like a handshake session's."""
    try:
        routed = mcp_modern.route(message, request.headers)
        if not isinstance(routed, mcp_modern.ModernRequest):
            raise McpError(routed.code, routed.message, data=routed.data)
        version = routed.version
        session = McpSession(agent_id=principal.agent_id, version=version, nonce=secrets.token_hex(8))
        default_task = mcp_modern.user_task(request.headers.get(TOOLHUB_SESSION_HEADER))
        ctx = _Context(request, principal, session, default_task, client=routed.capabilities)
        # tasks/* are the tasks extension's methods, which the SDK's per-version surfaces lack.
        tasks = message.method.startswith("tasks/")
        parsed: Any = None if tasks else _parse(message.method, version, message.params)
        result: BaseModel
        if tasks:
            result = mcp_tasks.serve(message.method, message.params, ctx.tasks, request.headers)
        elif message.method == "server/discover":
            capabilities = mcp_tasks.capabilities(version)
            result = mcp_modern.discover_result(instructions=INSTRUCTIONS, capabilities=capabilities)
        elif message.method == "tools/list":
            result = _tools_list(ctx).model_copy(
                update={"ttl_ms": mcp_modern.TOOLS_LIST_TTL_MS, "cache_scope": "private"}
            )
        elif message.method == "tools/call":
            result = _tools_call(ctx, parsed, message.id)
        else:
            raise McpError(
                types.METHOD_NOT_FOUND, f"Method not found: {message.method[:100]} (ToolHub serves tools)."
            )
    except McpError as error:
        if error.status == 200:
            error.status = mcp_modern.http_status(error.code)
        raise
    return _result(message.id, mcp_modern.shaped(message.method, version, result, server_info=SERVER_INFO))


def _handle(request: HttpRequest, principal: AgentPrincipal, message: types.JSONRPCRequest) -> JsonResponse:
    if mcp_modern.speaks_modern(request.headers, message.params):
        return _handle_modern(request, principal, message)
    if message.method == "initialize":
        return _initialize(principal, message)
    session = mcp_sessions.session(request, principal)
    version = mcp_sessions.protocol_version(request, session)
    session = replace(session, version=version)
    ctx = _Context(request=request, principal=principal, session=session, default_task=f"mcp-{session.nonce}")
    result: BaseModel
    if message.method.startswith("tasks/"):
        served = mcp_tasks.serve(message.method, message.params, ctx.tasks, request.headers)
        return _result(message.id, served.wire)
    parsed = _parse(message.method, version, message.params)
    if message.method == "ping":
        result = types.EmptyResult()
    elif message.method == "tools/list":
        result = _tools_list(ctx)
    elif message.method == "tools/call":
        result = _tools_call(ctx, parsed, message.id)
    else:
        raise McpError(
            types.METHOD_NOT_FOUND, f"Method not found: {message.method[:100]} (ToolHub serves tools)."
        )
    return _result(message.id, _shaped(message.method, version, result))


def _result(rpc_id: types.RequestId, result: dict[str, Any]) -> JsonResponse:
    # types.JSONRPCResponse's fields, built as its model_dump would give them: the id is the
    # request's, already validated, and the result already in its version's shape.
    return JsonResponse({"jsonrpc": "2.0", "id": rpc_id, "result": result})


class McpView(View):
    http_method_names = ["post", "get", "delete"]

    @classmethod
    def as_view(cls, **initkwargs: Any) -> Any:
        # An agent's key authenticates, never a cookie: no CSRF check. Exempted once here;
        # method_decorator on dispatch would wrap the method anew on every request.
        return csrf_exempt(super().as_view(**initkwargs))

    def get(self, request: HttpRequest) -> HttpResponse:
        # No server-initiated messages: the spec's answer is 405 for the GET stream.
        return HttpResponse(status=405, headers={"Allow": "POST"})

    delete = get

    def post(self, request: HttpRequest) -> HttpResponse:
        if not origin_allowed(request):
            return _error(None, McpError(types.INVALID_REQUEST, "Origin not allowed.", status=403))
        try:
            return _served(request, on_trust=True)
        except StaleKey:
            # The key taken on trust is not as remembered, and nothing was written: the same
            # request again, its key read in full.
            return _served(request, on_trust=False)


def _served(request: HttpRequest, *, on_trust: bool) -> HttpResponse:
    """The answer to one POST. A key taken on trust is checked before any answer leaves and
    before anything is written: by tools/call with the task's counters (one round trip), by
    every other method before it is served. StaleKey when it is not as remembered."""
    try:
        principal = authenticated_agent(request.META, on_trust=on_trust)
    except AuthenticationFailed as exc:
        principal, failure = None, str(exc.detail)
    else:
        failure = "Send 'Authorization: Bearer <agent key>'."
    if principal is None:
        return _error(
            None,
            McpError(types.INVALID_REQUEST, f"Unauthorized: {failure}", status=401),
            headers={"WWW-Authenticate": 'Bearer realm="toolhub"'},
        )
    rpc_id: types.RequestId | None = None
    try:
        message = read_message(request)
        if not isinstance(message, types.JSONRPCRequest):
            key_confirmed(principal)
            return HttpResponse(status=202)
        rpc_id = message.id
        if message.method != "tools/call":
            key_confirmed(principal)
        response = _handle(request, principal, message)
    except McpError as error:
        key_confirmed(principal)
        return _error(rpc_id, error)
    except StaleKey:
        raise
    except DatabaseError:
        logger.exception("database unavailable during an MCP request")
        unavailable = McpError(
            types.INTERNAL_ERROR,
            "ToolHub cannot reach its database, so nothing was run; try again in a few seconds.",
            status=503,
        )
        return _error(rpc_id, unavailable, headers={"Retry-After": "5"})
    except Exception:
        internal = InternalError()
        logger.exception("internal error %s in an MCP request", internal.error_id)
        return _error(rpc_id, McpError(types.INTERNAL_ERROR, internal.message, status=500))
    key_confirmed(principal)  # settled by the call's counters already: a no-op that keeps the rule local
    return response
