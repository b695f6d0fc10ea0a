"""The official MCP SDK's client connect policy (`mcp.client._probe.negotiate_auto`), which
the mcp executor runs on each upstream session (apps/gateway/executors/mcp/sessions.py).

The internal: `negotiate_auto(session)`, a coroutine taking a `ClientSession`, is what
`mcp.Client(mode="auto")` runs at connect: `server/discover` at the newest modern revision,
and the `initialize` handshake with a server that does not answer it, leaving one of
`session.discover_result` / `session.initialize_result` set. The executor builds its
`ClientSession` itself (to hand it the egress policy's transport), so it cannot use
`mcp.Client`, and calls the policy directly.

Checked against mcp 2.3.0.

If it changes: moved or renamed, the executor fails at import; changed in behaviour, an
upstream could be spoken to on an older revision than both sides serve, or not at all.
tests/common/compat/test_mcp_client.py fails first on the shape, and
tests/gateway/executors/mcp/test_mcp_revisions.py on the behaviour (a modern server and a
handshake-only one).
"""

from __future__ import annotations

from mcp.client._probe import negotiate_auto

__all__ = ["negotiate_auto"]
