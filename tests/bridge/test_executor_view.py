"""What the `mcp` executor's own session layer (apps/gateway/executors/mcp/sessions.py)
gets from the bridge in each failure, so that run_mcp classifies it rightly: a process
that is not running is a refusal before anything was sent (a JSON-RPC code run_mcp counts
among REFUSAL_CODES, `data.reason` NOT_RUNNING); a process that died under a call is an
error after sending (not a refusal: ambiguous); the server's invalid params stay -32602."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult

from apps.gateway.executors.mcp.executor import REFUSAL_CODES
from apps.gateway.executors.mcp.session import Progress, Session, SessionKey, leaf
from apps.gateway.executors.mcp.sessions import called
from apps.gateway.executors.mcp.tool_call import call_on
from apps.upstreams.bridge import NOT_RUNNING, PROCESS_STOPPED

from .conftest import headers_for, hostile_launcher, url_for


def _executor_call(
    url: str, headers: dict[str, str], tool: str, arguments: dict[str, Any]
) -> tuple[Any, Progress]:
    """The call as run_mcp makes it: its answer or error, and how far it got."""
    key = SessionKey(1, url, tuple(sorted(headers.items())))
    progress = Progress()
    try:
        answer = called(key, _call_of(tool, arguments, progress), progress, readonly=False, timeout_s=60)
        return answer, progress
    except Exception as exc:  # noqa: BLE001 - the test looks at what failed
        return leaf(exc), progress


def _call_of(tool: str, arguments: dict[str, Any], progress: Progress) -> Callable[[Session], CallToolResult]:
    def call(session: Session) -> CallToolResult:
        return call_on(session, tool, arguments, progress)

    return call


def test_a_process_that_cannot_start_is_a_refusal_before_sending(mcp_bridge):
    headers = headers_for(hostile_launcher(read_paths=["/nonexistent/server.py"]))

    error, progress = _executor_call(url_for(upstream_id=500, tenant_id=1), headers, "whoami", {})

    assert isinstance(error, MCPError), error
    assert not progress.sent
    assert error.error.code in REFUSAL_CODES and error.error.code != INVALID_PARAMS
    assert error.error.data["reason"] == NOT_RUNNING


def test_a_process_that_dies_under_a_call_is_not_a_refusal(mcp_bridge):
    headers = headers_for(hostile_launcher())
    url = url_for(upstream_id=501, tenant_id=1)
    assert _executor_call(url, headers, "whoami", {})[0].structured_content["uid"] == 65534

    error, progress = _executor_call(url, headers, "crash", {})

    assert isinstance(error, MCPError), error
    assert progress.sent
    assert error.error.code not in REFUSAL_CODES
    assert error.error.data == {"reason": PROCESS_STOPPED}
    # The next call, on the same session while the process backs off, is refused unsent.
    again, _ = _executor_call(url, headers, "whoami", {})
    assert isinstance(again, MCPError) and again.error.code in REFUSAL_CODES
    assert again.error.data["reason"] == NOT_RUNNING


def test_invalid_params_stay_invalid_params(mcp_bridge):
    headers = headers_for(hostile_launcher())

    error, _ = _executor_call(url_for(upstream_id=502, tenant_id=1), headers, "protocol_error", {"why": "x"})

    assert isinstance(error, MCPError) and error.error.code == INVALID_PARAMS
