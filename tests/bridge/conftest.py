"""What the bridge's tests share: launchers built as ToolHub builds them (an McpLauncher,
unsaved), the headers ToolHub sends (apps.upstreams.bridge), and an MCP client session with
the bridge as the executor opens one (the SDK's streamable_http_client, ClientSession and
the connect policy `negotiate_auto`)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from apps.common.compat.mcp_client import negotiate_auto
from apps.upstreams.bridge import bridge_headers, bridge_url, launch_spec
from apps.upstreams.models import McpLauncher

T = TypeVar("T")
VENV_BIN = Path(sys.prefix) / "bin"
HOSTILE = Path(__file__).resolve().parent / "hostile_server.py"


def launcher(name: str, command: list[str], **fields: Any) -> McpLauncher:
    return McpLauncher(name=name, command=command, **fields)


def time_launcher(**fields: Any) -> McpLauncher:
    return launcher("time", [str(VENV_BIN / "mcp-server-time"), "--local-timezone", "UTC"], **fields)


def hostile_launcher(**fields: Any) -> McpLauncher:
    """tests/bridge/hostile_server.py on the venv's interpreter: only the script is readable."""
    fields.setdefault("read_paths", [str(HOSTILE)])
    return launcher("hostile", [str(VENV_BIN / "python"), str(HOSTILE)], **fields)


def headers_for(
    server: McpLauncher, *, args: list[str] | None = None, env_name: str | None = None,
    credential: str | None = None,
) -> dict[str, str]:
    spec = launch_spec(launcher=server, args=args or [], env_name=env_name)
    return bridge_headers(spec=spec, credential_value=credential)


def url_for(*, upstream_id: int = 1, tenant_id: int | None = 1, subject: str = "") -> str:
    return bridge_url(upstream_id=upstream_id, tenant_id=tenant_id, subject=subject)


@asynccontextmanager
async def bridge_session(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0), trust_env=False) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await negotiate_auto(session)
        yield session


def on_bridge(url: str, headers: dict[str, str], work: Callable[[ClientSession], Awaitable[T]]) -> T:
    """`work`'s result on a new session with the bridge (a fresh event loop per call)."""

    async def run() -> T:
        async with bridge_session(url, headers) as session:
            return await work(session)

    return asyncio.run(run())


def leaf(exc: BaseException) -> BaseException:
    """The first error inside an exception group (anyio's task groups wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def call(url: str, headers: dict[str, str], tool: str, arguments: dict[str, Any] | None = None) -> Any:
    """The tool's CallToolResult, or the MCPError (or other error) the client raised."""

    async def work(session: ClientSession) -> Any:
        return await session.call_tool(tool, arguments or {})

    try:
        return on_bridge(url, headers, work)
    except BaseException as exc:  # noqa: BLE001 - the test looks at what failed
        return leaf(exc)


def structured(url: str, headers: dict[str, str], tool: str, arguments: dict[str, Any] | None = None) -> Any:
    """The structured answer of a tool that must succeed."""
    result = call(url, headers, tool, arguments)
    assert not isinstance(result, BaseException), repr(result)
    assert not result.is_error, result
    return result.structured_content


def eventually(check: Callable[[], T], *, timeout_s: float = 10, every_s: float = 0.2) -> T:
    """`check()`'s first value that raises nothing within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(every_s)
