"""One `tools/call` on an open session, sent by ToolHub as one POST from the calling thread.

The SDK's `ClientSession.call_tool` cost more CPU than the HTTP request it makes: under a
federated load, pydantic models of the request and of every message, the JSON-RPC
dispatcher's anyio streams and a task per POST, and on each session's first call of a tool
a `tools/list`, to check the answer against the output schema the server lists now. The
session stays the SDK's (sessions.py: its revision, negotiated by the SDK, and its id); the
call is put on the wire as the SDK would put it (stamped_headers: the revision's `_meta` and
headers), on the session's client for calls (sessions.py: the session's headers, the egress
transport, the answer limit; a redirect followed only within the endpoint's origin, as the
SDK follows one), on the calling thread: the hop to the session's event loop and back, and
an async request there, cost a federated call more CPU than the rest of the exchange. Its
answer is read as the SDK's transport reads it:

- a JSON answer, or an SSE stream whose first JSON-RPC response or error is the answer
  (notifications on the way are dropped; a request of the server is declined);
- 202, a redirect off the endpoint's origin, or another content type: invalid request; an
  HTTP error: its JSON-RPC error when it has one, else 404 is "session terminated" (a server
  of session ids, which no longer knows the session: it ran nothing) or "not found", any
  other "server returned an error response";
- an answer that is not JSON-RPC: a parse error; a stream that ends or breaks without an
  answer: connection closed (a stream is not resumed: a read is sent again, a write is
  `unknown`, on_session);
- a result other than a complete one (input required, an extension's), or a connection that
  breaks: the session is given up and SessionLost raised, as the SDK's session ending would
  (a connection refused marks the call's Progress: the server read none of it);
- past the deadline of the call (egress.deadline), httpx2's timeout; past the answer limit,
  AnswerTooLarge.

What the answer's structured content is worth is checked by ToolHub against the version's
reviewed output schema (pipeline/output.py), not against what the server lists today.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
from httpx2 import EventSource
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    CallToolResult,
)

from apps.common.compat.mcp_client import next_request_within_origin, stamped_headers

from ..answer_limit import ResponseTooLarge
from ..base import AnswerTooLarge
from .session import SESSION_ID_HEADER, Progress, Session, SessionLost, leaf

# The SDK's bound on one event of an SSE answer.
SSE_EVENT_BYTES = 1024 * 1024
_CONTENT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
# Ids of ToolHub's own requests: strings, so never one of the SDK's integer ids on the session.
_IDS = itertools.count(1)


def call_on(session: Session, tool: str, arguments: dict[str, Any], progress: Progress) -> CallToolResult:
    """The server's result of `tool` called with `arguments`. Raises MCPError (the server's
    JSON-RPC error, or one standing for an answer that never came whole), SessionLost,
    AnswerTooLarge, or httpx2's timeout past the call's deadline."""
    try:
        return CallToolResult.model_validate(_complete(_answered(session, tool, arguments, progress)))
    except MCPError:
        raise
    except ResponseTooLarge as exc:
        raise AnswerTooLarge(exc.limit) from None
    except httpx2.TimeoutException as exc:
        if not progress.refused:
            raise  # after sending
        session.give_up()
        raise SessionLost(exc) from None
    except Exception as exc:  # noqa: BLE001 - the connection or the answer broke: the session with it
        session.give_up()
        raise SessionLost(leaf(exc)) from None


def ping_on(session: Session) -> None:
    """A `ping` on the session's client for calls, its answer read: the client's first
    connection is made then, not by the first call. Raises what the POST raises."""
    with _posted(session, *_stamped(session, {"method": "ping", "params": {}})) as response:
        response.read()


def _stamped(session: Session, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The request `data` (method and params) as the session's revision sends it: its
    JSON-RPC body and headers."""
    headers = {**_headers(session), **stamped_headers(session.client, data)}
    return {"jsonrpc": "2.0", "id": f"toolhub-{next(_IDS)}", **data}, headers


def _headers(session: Session) -> dict[str, str]:
    """What every POST on the session carries; a request adds what its stamp says."""
    headers = dict(_CONTENT)
    if session.session_id:
        headers[SESSION_ID_HEADER] = session.session_id
    if version := session.client.protocol_version:
        headers[MCP_PROTOCOL_VERSION_HEADER] = version
    return headers


@contextmanager
def _posted(
    session: Session, body: dict[str, Any], headers: dict[str, str], progress: Progress | None = None
) -> Iterator[httpx2.Response]:
    """The answer to `body` POSTed on the session's client for calls, a redirect followed only
    as the SDK follows one (within the endpoint's origin, at most max_redirects). A request
    that got no connection marks `progress` refused: the server read none of it."""
    client = session.calls
    request = client.build_request("POST", session.url, json=body, headers=headers)
    followed = 0
    while True:
        try:
            response = client.send(request, stream=True, follow_redirects=False)
        except (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout):
            if progress is not None:
                progress.refused = True
            raise
        next_request = next_request_within_origin(response)
        if next_request is None or followed == client.max_redirects:
            break
        try:
            response.read()  # the connection goes back to the pool
        finally:
            response.close()
        request = next_request
        followed += 1
    try:
        yield response
    finally:
        response.close()


def _answered(session: Session, tool: str, arguments: dict[str, Any], progress: Progress) -> dict[str, Any]:
    call = {"method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    body, headers = _stamped(session, call)
    with _posted(session, body, headers, progress) as response:
        status = response.status_code
        if status == 202:
            raise MCPError(INVALID_REQUEST, "server answered a request with 202 Accepted")
        if 300 <= status < 400 and (location := response.headers.get("location")):
            raise MCPError(INVALID_REQUEST, f"Redirect to {location} not followed")
        content_type = response.headers.get("content-type", "").lower()
        if status >= 400:
            raise _http_error(session, response, content_type)
        if content_type.startswith("application/json"):
            try:
                message = json.loads(response.read())
            except (httpx2.StreamError, ValueError) as exc:
                if isinstance(exc, ResponseTooLarge):
                    raise
                raise MCPError(PARSE_ERROR, f"Failed to parse JSON response: {exc}") from None
            return _result_of(message)
        if content_type.startswith("text/event-stream"):
            return _streamed(session, response)
        raise MCPError(INVALID_REQUEST, f"Unexpected content type: {content_type}")


def _http_error(session: Session, response: httpx2.Response, content_type: str) -> MCPError:
    unknown_session = response.status_code == 404 and bool(session.session_id)
    if unknown_session:
        session.expired.set()
        session.give_up()
    if content_type.startswith("application/json"):
        try:
            message = json.loads(response.read())
        except (httpx2.StreamError, ValueError):
            message = None
        if isinstance(message, dict) and isinstance(error := message.get("error"), dict):
            return _error(error)
    if unknown_session:
        return MCPError(INVALID_REQUEST, "Session terminated")
    if response.status_code == 404:
        return MCPError(METHOD_NOT_FOUND, "Not Found")
    return MCPError(INTERNAL_ERROR, "Server returned an error response")


def _streamed(session: Session, response: httpx2.Response) -> dict[str, Any]:
    """The answer on an SSE stream: its first JSON-RPC response or error."""
    try:
        for event in EventSource(response, max_event_size=SSE_EVENT_BYTES):
            if event.event != "message" or not event.data:
                continue
            try:
                message = json.loads(event.data)
            except ValueError as exc:
                raise MCPError(PARSE_ERROR, f"Failed to parse SSE message: {exc}") from None
            if isinstance(message, dict) and "method" in message:
                if "id" in message:
                    _decline(session, message)
                continue
            return _result_of(message)
    except (MCPError, ResponseTooLarge, httpx2.TimeoutException):
        raise
    except Exception as exc:  # noqa: BLE001 - whatever broke the stream, no answer came
        raise MCPError(CONNECTION_CLOSED, f"SSE stream failed: {type(leaf(exc)).__name__}") from None
    raise MCPError(CONNECTION_CLOSED, "SSE stream ended without a response")


def _decline(session: Session, request: dict[str, Any]) -> None:
    """Answer a request of the server made during a call: a ping, or no for anything else
    (ToolHub offers a server no sampling, elicitation or roots)."""
    if request["method"] == "ping":
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"], "result": {}}
    else:
        answer = {"jsonrpc": "2.0", "id": request["id"],
                  "error": {"code": METHOD_NOT_FOUND, "message": f"{request['method']} is not offered"}}
    with _posted(session, answer, _headers(session)):
        pass


def _result_of(message: Any) -> dict[str, Any]:
    """The result of a JSON-RPC response; MCPError for an error or anything else."""
    if isinstance(message, dict) and message.get("jsonrpc") == "2.0":
        if isinstance(error := message.get("error"), dict):
            raise _error(error)
        if isinstance(result := message.get("result"), dict):
            return result
    raise MCPError(PARSE_ERROR, "Failed to parse the response: not a JSON-RPC response")


def _error(error: dict[str, Any]) -> MCPError:
    code, message = error.get("code"), error.get("message")
    if not isinstance(code, int) or not isinstance(message, str):
        return MCPError(PARSE_ERROR, "Failed to parse the response: a malformed JSON-RPC error")
    return MCPError(code, message, error.get("data"))


def _complete(result: dict[str, Any]) -> dict[str, Any]:
    """A complete result (2026-07-28 also has `input_required`, and extensions their own)."""
    if (kind := result.get("resultType", "complete")) != "complete":
        raise RuntimeError(f"the server answered a result of type {kind!r}, which ToolHub does not take")
    return result
