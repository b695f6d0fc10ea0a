"""Sessions opened when a serving process starts, before the first call needs them: a first
call would otherwise pay the connection (`server/discover` or the `initialize` handshake,
160–170 ms), then the first connection of the session's client for calls (a `ping` makes it,
0.3–0.7 ms). The gateway's outbound.mcp_sessions_warm says which upstreams (those granted
tools call) and when (gunicorn's post_worker_init, Celery's worker_process_init)."""

from __future__ import annotations

import logging
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

import httpcore2

from apps.upstreams.errors import SubjectCredentialMissing, UpstreamNotFound
from apps.upstreams.models import UpstreamKind
from apps.upstreams.selectors import upstream_for_call

from ..egress import destination_refusal
from .executor import endpoint_of, session_key
from .session import LOOP, Progress, SessionKey
from .sessions import called, opened
from .tool_call import ping_on

logger = logging.getLogger("toolhub.egress")


@dataclass(frozen=True)
class McpUse:
    """An MCP upstream a tenant's granted tools call: `owner_id` owns the upstream row (None:
    the platform's, for a shared tool), `tenant_id` is the calling tenant, whose session it is."""

    tenant_id: int
    owner_id: int | None
    upstream: str


@dataclass(frozen=True)
class Warmed:
    opened: int
    skipped: int
    failed: tuple[str, ...]


def warm_mcp_sessions(uses: list[McpUse], *, timeout_s: float) -> Warmed:
    """Open, all at once and for at most `timeout_s`, the sessions the calls of `uses` will
    use, so that the first call of the process does not pay the handshake. An upstream whose
    credential is each end user's own (no session without a user), unknown, or refused by the
    egress policy is skipped; one that cannot be reached is named in `failed`. Never raises
    for an upstream: its first call opens the session as it would have."""
    keys: dict[SessionKey, str] = {}
    skipped = 0
    for use in uses:
        try:
            upstream = upstream_for_call(
                tenant_id=use.owner_id, name=use.upstream, subject="", calling_tenant_id=use.tenant_id
            )
            if upstream.kind != UpstreamKind.MCP:
                raise UpstreamNotFound(use.upstream)
            endpoint = endpoint_of(upstream)
            if destination_refusal(endpoint.base_url):
                raise UpstreamNotFound(use.upstream)
        except (UpstreamNotFound, SubjectCredentialMissing, httpcore2.ConnectError):
            skipped += 1
            continue
        keys.setdefault(session_key(endpoint, use.tenant_id), use.upstream)
    if not keys:
        return Warmed(opened=0, skipped=skipped, failed=())
    try:
        results = LOOP.submit(opened(list(keys), timeout_s=timeout_s), timeout_s=timeout_s + 1)
    except FutureTimeout:
        results = [TimeoutError()] * len(keys)
    late = f"no session within {timeout_s:g} s"
    failed = tuple(
        f"{name}: {late if isinstance(error, TimeoutError) else type(error).__name__}"
        for name, error in zip(keys.values(), results, strict=True) if error
    )
    for (key, name), error in zip(keys.items(), results, strict=True):
        if not error:
            _connected_for_calls(key, name, timeout_s=timeout_s)
    return Warmed(opened=len(keys) - len(failed), skipped=skipped, failed=failed)


def _connected_for_calls(key: SessionKey, name: str, *, timeout_s: float) -> None:
    """Ping on the session's client for calls; a server that does not answer it is left to
    connect on its first call."""
    try:
        called(key, ping_on, Progress(), readonly=True, timeout_s=timeout_s)
    except Exception as exc:  # noqa: BLE001 - the first call connects, as it would have
        logger.info("MCP upstream %s: no connection for calls at start (%s)", name, type(exc).__name__)
