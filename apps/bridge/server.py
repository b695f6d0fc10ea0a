"""The bridge's ASGI app: each process path served as an MCP server over Streamable HTTP.

A request to `/upstreams/{upstream}/{tenant|platform}/{subject|-}/mcp` (apps/upstreams/
bridge.py has the contract) must carry the bridge token (401 otherwise) and a launch spec
(400 with a JSON message otherwise). A POST then gets the key's process (processes.py),
started if need be, before the MCP SDK's session manager serves it: both the stateless
2026-07-28 revision (`server/discover`) and the 2025-11-25 `initialize` handshake, with
`ping`, answered by the bridge itself, and `tools/list` (every page of the process's) and
`tools/call` handed to the process as they came, its answers and JSON-RPC errors (code,
message, data) handed back unchanged.

What the executor sees when the process cannot serve a request:
- no process to send it to (it cannot be started, or it died and is backing off): HTTP 503
  with a JSON-RPC error, code -32600 (a refusal: nothing ran) and `data.reason`
  NOT_RUNNING, its message saying when calling again may help;
- the process ended while the request was in flight (exited, killed for what it wrote, past
  its CPU time): JSON-RPC error -32603 with `data.reason` PROCESS_STOPPED: it may have run.

`GET /healthz` answers 200 without a token. The app's lifespan runs the session manager and
the supervisor: at shutdown every process is stopped.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
)
from starlette.types import Receive, Scope, Send

from apps.upstreams.bridge import (
    CREDENTIAL_HEADER,
    LAUNCH_HEADER,
    NOT_RUNNING,
    PROCESS_STOPPED,
    ProcessAddress,
    bridge_token,
    spec_from_header,
)

from .limits import Cgroups
from .processes import Managed, ProcessGone, ProcessKey, Supervisor, Unavailable
from .sandbox import LaunchSpec

logger = logging.getLogger("toolhub.bridge")

SCOPE_KEY = "toolhub.bridge.process"
SERVER_NAME = "toolhub-bridge"


def _process(ctx: ServerRequestContext[Any, Any]) -> Managed:
    managed = ctx.request.scope.get(SCOPE_KEY) if ctx.request is not None else None
    if not isinstance(managed, Managed):
        raise MCPError(INVALID_REQUEST, "no process for this request: send it to a process's path with "
                       "its launch spec")
    return managed


def _not_sent(exc: Unavailable) -> MCPError:
    return MCPError(INVALID_REQUEST, exc.message,
                    data={"reason": NOT_RUNNING, "retry_after_s": max(1, round(exc.retry_after_s))})


def _gone(exc: ProcessGone) -> MCPError:
    return MCPError(
        INTERNAL_ERROR,
        f"The MCP server's process stopped while the request was in flight ({exc}): it may have run it. "
        "A new process is started on the next request.",
        data={"reason": PROCESS_STOPPED},
    )


@contextmanager
def _as_mcp_errors() -> Iterator[None]:
    """A process that could not take the request, or ended under it, as the JSON-RPC error
    the executor classifies (the module's docstring)."""
    try:
        yield
    except Unavailable as exc:
        raise _not_sent(exc) from None
    except ProcessGone as exc:
        raise _gone(exc) from None


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
) -> ListToolsResult:
    with _as_mcp_errors():
        return ListToolsResult(tools=await _process(ctx).list_tools())


async def call_tool(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
    with _as_mcp_errors():
        return await _process(ctx).call_tool(params.name, params.arguments)


class BridgeApp:
    """The ASGI app: checks, the process, then the SDK's Streamable HTTP session manager."""

    def __init__(self, *, scratch_root: Path, max_line_bytes: int) -> None:
        self.cgroups = Cgroups.detect()
        self.supervisor = Supervisor(
            scratch_root=scratch_root, cgroups=self.cgroups, max_line_bytes=max_line_bytes
        )
        self.token = bridge_token()
        self.mcp = Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)
        # The SDK's DNS-rebinding check (a Host allow-list) is off: every request must carry
        # the bridge token, which a page a browser was lured to cannot add, and an allow-list
        # would refuse the name a deployment reaches the bridge by (a container's, say).
        self.manager = StreamableHTTPSessionManager(
            app=self.mcp, json_response=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"] == "/healthz":
            await _json(send, 200, {"status": "ok", "processes": len(self.supervisor)})
            return
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]
        }
        offered = headers.get("authorization", "")
        if not hmac.compare_digest(offered.encode(), f"Bearer {self.token}".encode()):
            await _json(send, 401, {"error": "unauthorized", "message": "Send the bridge token as a bearer "
                                    "token: only ToolHub's processes have it."},
                        extra=[(b"www-authenticate", b"Bearer")])
            return
        address = ProcessAddress.from_path(scope["path"])
        if address is None:
            await _json(send, 400, {"error": "bad_path", "message": "The path must be "
                                    "/upstreams/{upstream id}/{tenant id|platform}/{subject key|-}/mcp."})
            return
        try:
            spec = LaunchSpec.from_dict(spec_from_header(headers.get(LAUNCH_HEADER.lower(), "")))
        except ValueError as exc:  # json.JSONDecodeError and binascii.Error are ValueErrors too
            message = f"The {LAUNCH_HEADER} header is not a launch spec: {exc}"[:500]
            await _json(send, 400, {"error": "bad_launch_spec", "message": message})
            return
        credential = headers.get(CREDENTIAL_HEADER.lower())
        key = ProcessKey.of(address, spec, credential)
        if scope["method"] != "POST":
            # A GET stream or a DELETE of a session: nothing for the process.
            await self.manager.handle_request(scope, receive, send)
            return
        async with AsyncExitStack() as stack:
            try:
                managed = await stack.enter_async_context(self.supervisor.serving(key, spec, credential))
            except Unavailable as exc:
                await _not_running(send, exc)
                return
            await self.manager.handle_request({**scope, SCOPE_KEY: managed}, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(self.supervisor.running())
            await stack.enter_async_context(self.manager.run())
            logger.info("MCP bridge ready; limits enforced: %s", self.cgroups.describe())
            await send({"type": "lifespan.startup.complete"})
            await receive()
            logger.info("MCP bridge stopping: stopping %s processes", len(self.supervisor))
        await send({"type": "lifespan.shutdown.complete"})


async def _json(
    send: Send, status: int, body: Any, *, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    data = json.dumps(body).encode()
    await send({
        "type": "http.response.start", "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                    *(extra or [])],
    })
    await send({"type": "http.response.body", "body": data})


async def _not_running(send: Send, exc: Unavailable) -> None:
    """503 with a JSON-RPC error the SDK client raises as it is (the request's id is the
    client's to fill in: it was never read)."""
    error = _not_sent(exc).error
    body = {"jsonrpc": "2.0", "id": None, "error": error.model_dump(mode="json", exclude_none=True)}
    retry = str(error.data["retry_after_s"]).encode()
    await _json(send, 503, body, extra=[(b"retry-after", retry)])


def bridge_app() -> BridgeApp:
    return BridgeApp(
        scratch_root=Path(settings.TOOLHUB_MCP_SCRATCH_DIR),
        max_line_bytes=settings.TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES,
    )
