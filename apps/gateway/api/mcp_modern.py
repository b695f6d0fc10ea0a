"""The per-request envelope of MCP 2026-07-28 on `/mcp`: which wire a request is on, the
checks its envelope must pass, and the shape of its results.

2026-07-28 has no `initialize` and no session: every request carries the protocol version,
the client's capabilities (and optionally its info) in `params._meta`, repeated in the
`MCP-Protocol-Version`, `Mcp-Method` and (for tools/call) `Mcp-Name` headers so that
intermediaries can route without reading the body. Every result says its `resultType`, list
results say how long a client may cache them (`ttlMs`, `cacheScope`), and every result names
the server in `_meta`. The checks are the SDK's own (`mcp.shared.inbound`, the ladder its
server runs), so what is refused here is what the SDK's server refuses, in its words and codes.

The handshake revisions (2024-11-05 to 2025-11-25) are untouched: a request is on the 2026
wire when its `MCP-Protocol-Version` header names a modern revision, or when it names none
the handshake knows and the body carries the 2026 envelope (so that a client proposing a
revision ToolHub does not serve is told which modern ones it does, as the SDK's server does).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    classify_inbound_request,
)
from mcp_types import methods as surfaces
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from .mcp_wire import Shaped

# How long a client may keep an answer. What an agent sees is its own (its grants, its
# toolsets), so never a shared cache: `cacheScope` is always "private". A tool list follows
# the catalog, which operators change: a minute. What the server is and can do does not
# change while it runs.
TOOLS_LIST_TTL_MS = 60_000
DISCOVER_TTL_MS = 3_600_000


def speaks_modern(headers: Mapping[str, str], params: Mapping[str, Any] | None) -> bool:
    """Whether a request is on the 2026-07-28 wire rather than a handshake revision's."""
    version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
    if version in HANDSHAKE_PROTOCOL_VERSIONS:
        return False
    if version in MODERN_PROTOCOL_VERSIONS:
        return True
    meta = params.get("_meta") if params is not None else None
    return isinstance(meta, Mapping) and types.PROTOCOL_VERSION_META_KEY in meta


@dataclass(frozen=True)
class ModernRequest:
    """What a 2026-07-28 request's envelope says: its revision and the client's capabilities."""

    version: str
    capabilities: types.ClientCapabilities


def route(
    message: types.JSONRPCRequest, headers: Mapping[str, str]
) -> ModernRequest | InboundLadderRejection:
    """The request's envelope, checked: the `_meta` pair present, the headers equal to the
    body (version, method, tool name), a served version, capabilities that are an object.
    The first check that fails is the answer, as the SDK's server gives it."""
    body = {"method": message.method, "params": message.params}
    verdict = classify_inbound_request(body, headers=headers)
    if isinstance(verdict, InboundLadderRejection):
        return verdict
    try:
        capabilities = types.ClientCapabilities.model_validate(verdict.client_capabilities)
    except ValidationError:
        return InboundLadderRejection(
            code=types.INVALID_PARAMS,
            message=f"params._meta {types.CLIENT_CAPABILITIES_META_KEY!r} must be a capabilities object",
        )
    return ModernRequest(version=verdict.protocol_version, capabilities=capabilities)


def discover_result(*, instructions: str, capabilities: types.ServerCapabilities) -> types.DiscoverResult:
    """server/discover: every revision `/mcp` serves, and what it can do on this one."""
    return types.DiscoverResult(
        supported_versions=[*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS],
        capabilities=capabilities,
        instructions=instructions,
        ttl_ms=DISCOVER_TTL_MS,
        cache_scope="private",
    )


def http_status(code: int) -> int:
    """The HTTP status a JSON-RPC error goes out with on the 2026 wire (the SDK's table)."""
    return ERROR_CODE_HTTP_STATUS.get(code, 200)


def shaped(
    method: str, version: str, result: BaseModel, *, server_info: types.Implementation
) -> dict[str, Any]:
    """A result as 2026-07-28 has it: the version's schema (an extension's result comes shaped),
    `resultType`, the server in `_meta`."""
    if isinstance(result, Shaped):
        wire = dict(result.wire)
    else:
        wire = surfaces.serialize_server_result(
            method, version, result.model_dump(by_alias=True, mode="json", exclude_none=True)
        )
    wire.setdefault("resultType", "complete")
    stamp = server_info.model_dump(mode="json", exclude_none=True)
    wire["_meta"] = {**(wire.get("_meta") or {}), types.SERVER_INFO_META_KEY: stamp}
    return wire


def user_task(session_token: str | None) -> str:
    """A stateless request's default task: its end user's session (a digest, never the token
    itself), so loop detection and budgets see one user's calls together across requests;
    the request alone when it names no end user."""
    if not session_token:
        return f"mcp-{secrets.token_hex(8)}"
    return f"mcp-user-{hashlib.sha256(session_token.encode()).hexdigest()[:16]}"
