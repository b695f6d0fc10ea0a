"""Internals of the official MCP SDK's client that the mcp executor uses
(apps/gateway/executors/mcp/sessions.py and tool_call.py).

- `negotiate_auto(session)` (`mcp.client._probe`), a coroutine taking a `ClientSession`, is
  what `mcp.Client(mode="auto")` runs at connect: `server/discover` at the newest modern
  revision, and the `initialize` handshake with a server that does not answer it, leaving one
  of `session.discover_result` / `session.initialize_result` set. The executor builds its
  `ClientSession` itself (to hand it the egress policy's transport), so it cannot use
  `mcp.Client`, and calls the policy directly.
- `stamped_headers(session, data)`: what the session's revision adds to a request before it
  is sent (`ClientSession._stamp`: on 2026-07-28 the `_meta` of protocol version, client
  info and capabilities, and the MCP-Protocol-Version / Mcp-Method / Mcp-Name headers; on
  the handshake revisions the version header), and the Mcp-Name header `send_request` adds.
  The executor sends `tools/call` itself, as one POST on the session's HTTP client, and must
  put on the wire what the SDK would.
- `next_request_within_origin(response)` (`mcp.shared._httpx_utils`): the request that
  follows a redirect the SDK's transports follow (within the endpoint's origin, same method),
  None for any other answer. The executor sends its calls from the calling thread on a sync
  client, which the SDK's `stream_within_origin` (async) does not take, and follows
  redirects by the same rule.

Checked against mcp 2.3.0.

If they change: moved or renamed, the executor fails at import; changed in behaviour, an
upstream could be spoken to on an older revision than both sides serve, or not at all.
tests/common/compat/test_mcp_client.py fails first on the shape, and
tests/gateway/executors/mcp/test_mcp_revisions.py on the behaviour (a modern server and a
handshake-only one).
"""

from __future__ import annotations

from typing import Any

from mcp.client._probe import negotiate_auto
from mcp.client.session import ClientSession
from mcp.shared._httpx_utils import next_request_within_origin
from mcp.shared.inbound import MCP_NAME_HEADER, encode_header_value

__all__ = ["negotiate_auto", "next_request_within_origin", "stamped_headers"]


def stamped_headers(session: ClientSession, data: dict[str, Any]) -> dict[str, str]:
    """Stamp the request `data` (`method` and `params`, changed in place) as `session` would
    send it, and return the headers its revision adds."""
    options: dict[str, Any] = {}
    session._stamp(data, options)  # type: ignore[arg-type]  # noqa: SLF001 - see the module's docstring
    headers: dict[str, str] = options.get("headers", {})
    if MCP_NAME_HEADER not in headers and isinstance(name := data.get("params", {}).get("name"), str):
        headers[MCP_NAME_HEADER] = encode_header_value(name)
    return headers
