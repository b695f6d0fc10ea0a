"""The sessions of `/mcp`'s handshake revisions: an `Mcp-Session-Id` that is signed, not
stored (the agent, the negotiated protocol version, a random id), and the protocol version
a request of the session speaks."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import mcp_types as types
from django.core import signing
from django.http import HttpRequest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from apps.tenancy.authentication import AgentPrincipal

from .mcp_wire import McpError

SESSION_ID_HEADER = "Mcp-Session-Id"
PROTOCOL_VERSION_HEADER = "MCP-Protocol-Version"
_SALT = "toolhub.mcp.session.v1"


@dataclass(frozen=True)
class McpSession:
    agent_id: int
    version: str
    nonce: str


def session_id(*, principal: AgentPrincipal, version: str) -> str:
    """A new session's id: what it says is signed, so no server state is kept."""
    payload = {"a": principal.agent_id, "v": version, "n": secrets.token_hex(8)}
    return signing.dumps(payload, salt=_SALT, compress=True)


# Session ids whose signature checked out, with what they say: a session sends its id with
# every request, and checking it (HMAC, base64, zlib, JSON) cost more than a memo lookup. Only
# signed ids are kept, so what a client sends cannot fill it; past the bound it starts over.
_verified_sessions: dict[str, McpSession] = {}
_MAX_VERIFIED_SESSIONS = 4096


def session(request: HttpRequest, principal: AgentPrincipal) -> McpSession:
    """The session the request's `Mcp-Session-Id` names, which must be this agent's."""
    value = request.headers.get(SESSION_ID_HEADER)
    if not value:
        raise McpError(
            types.INVALID_REQUEST, f"Missing {SESSION_ID_HEADER}: send initialize first.", status=400
        )
    found = _verified_sessions.get(value)
    if found is None:
        try:
            payload = signing.loads(value, salt=_SALT)
            found = McpSession(
                agent_id=int(payload["a"]), version=str(payload["v"]), nonce=str(payload["n"])
            )
        except (signing.BadSignature, KeyError, TypeError, ValueError):
            found = None
        else:
            if len(_verified_sessions) >= _MAX_VERIFIED_SESSIONS:
                _verified_sessions.clear()
            _verified_sessions[value] = found
    if found is None or found.agent_id != principal.agent_id:
        raise McpError(types.INVALID_REQUEST, "Unknown MCP session: send initialize again.", status=404)
    return found


def protocol_version(request: HttpRequest, session: McpSession) -> str:
    """The request's `MCP-Protocol-Version`, the session's when it sends none."""
    version = request.headers.get(PROTOCOL_VERSION_HEADER) or session.version
    if version not in HANDSHAKE_PROTOCOL_VERSIONS:
        raise McpError(
            types.INVALID_REQUEST,
            f"Unsupported {PROTOCOL_VERSION_HEADER} {version[:40]!r}; supported: "
            f"{', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}.",
            status=400,
        )
    return version
