"""The gateway's outbound calls that other apps may make: the public face of the executors.

Every connection ToolHub opens goes through the egress policy and the answer limit of
executors/ (egress.py, answer_limit.py). An app above the gateway that must reach the outside
world (the imports fetch documents and list MCP servers; the bench relays a provider's
answer) calls these functions and never an executor's internals, so the executors can change
shape freely.
"""

from __future__ import annotations

import logging
import threading
import time

import httpx2
from django.conf import settings
from django.db import DatabaseError, connections

from apps.common.egress import EgressRefused
from apps.common.errors import ToolHubError
from apps.tenancy.selectors import agents_recently_calling

from .agent_catalogs import AgentCatalog
from .executors.answer_limit import ResponseTooLarge
from .executors.egress import EgressTransport
from .executors.http.executor import shared_client
from .executors.mcp.executor import ListingFailed, list_mcp_tools
from .executors.mcp.warm import warm_mcp_sessions
from .executors.sandbox.runs import prewarm_sandboxes
from .metrics import invocation_series_start
from .pipeline.schema import compiled_validator
from .selectors import agent_catalog, mcp_uses

__all__ = [
    "FetchFailed",
    "FetchRefused",
    "FetchTooLarge",
    "FetchUnanswered",
    "FetchUnsuccessful",
    "ListingFailed",
    "fetch_document",
    "http_client",
    "agent_catalogs_warm",
    "list_mcp_tools",
    "mcp_sessions_warm",
    "mcp_sessions_warm_soon",
]

USER_AGENT = "ToolHub/1"
# The agents whose catalogs a starting process loads (the most recently calling first).
WARM_AGENTS = 100
logger = logging.getLogger("toolhub.egress")


class FetchFailed(Exception):
    """A document could not be fetched; the subclass says why, its message for an operator."""


class FetchRefused(FetchFailed):
    """The egress policy refuses the URL (or a redirect's); nothing was sent there."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FetchUnsuccessful(FetchFailed):
    """The server answered with a status other than 2xx."""

    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


class FetchTooLarge(FetchFailed):
    """The body went past a limit: the caller's `max_bytes` (`limit` is it), or the answer
    limit of every upstream answer (`limit` is None; the message names the setting)."""

    def __init__(self, message: str, limit: int | None) -> None:
        super().__init__(message)
        self.limit = limit


class FetchUnanswered(FetchFailed):
    """No usable answer: unreachable, a broken connection, a timeout, an invalid URL."""


def fetch_document(
    *, url: str, max_bytes: int, timeout_s: float, accept: str = "*/*", max_redirects: int = 3
) -> bytes:
    """The body of `url`, fetched with GET through the egress policy (redirects followed, each
    judged again), at most `max_bytes` of it, each step bounded by `timeout_s`. Raises the
    FetchFailed subclasses."""
    try:
        with httpx2.Client(
            transport=EgressTransport(), timeout=timeout_s, follow_redirects=True,
            max_redirects=max_redirects, headers={"User-Agent": USER_AGENT, "Accept": accept},
        ) as client, client.stream("GET", url) as response:
            if not response.is_success:
                raise FetchUnsuccessful(response.status_code)
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    raise FetchTooLarge(f"larger than {max_bytes} bytes", limit=max_bytes)
            return bytes(body)
    except EgressRefused as exc:
        raise FetchRefused(exc.reason) from None
    except ResponseTooLarge as exc:
        raise FetchTooLarge(str(exc), limit=None) from None
    except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
        raise FetchUnanswered(type(exc).__name__) from None


def http_client() -> httpx2.Client:
    """The http executor's own client (its connection pool, the egress transport, no
    redirects): for a caller that must measure or share exactly what tool calls use. Each
    request must pass a timeout."""
    return shared_client()



def mcp_sessions_warm() -> None:
    """Open the sessions of the MCP upstreams that published, granted tools call (per calling
    tenant), for at most TOOLHUB_MCP_WARM_S, so that the first call of each needs no handshake.
    Reads grants, versions and upstreams; logs what it opened and what it could not. Never
    raises: an upstream down, or the database, leaves the first call to open its session."""
    timeout_s = settings.TOOLHUB_MCP_WARM_S
    if timeout_s <= 0:
        return
    started = time.monotonic()
    try:
        warmed = warm_mcp_sessions(mcp_uses(limit=settings.TOOLHUB_MCP_MAX_SESSIONS), timeout_s=timeout_s)
    except DatabaseError as exc:
        logger.warning("MCP sessions not opened at start: the database failed (%s)", type(exc).__name__)
        return
    took_ms = round((time.monotonic() - started) * 1000)
    if warmed.failed:
        logger.warning(
            "MCP sessions opened at start: %d, %d skipped, %d not opened (%s) in %d ms",
            warmed.opened, warmed.skipped, len(warmed.failed), "; ".join(warmed.failed), took_ms,
        )
    else:
        logger.info("MCP sessions opened at start: %d, %d skipped, in %d ms", warmed.opened, warmed.skipped,
                    took_ms)


def agent_catalogs_warm() -> None:
    """Load the catalogs of the agents that called most recently (at most WARM_AGENTS), build
    the argument validators of what they may call and the views of each catalog a call reads
    (as a whole, per toolset and phase), into the process's memos, and start the metrics'
    series of what they may call, so that
    an agent's first call to a new process does not pay them (tens of ms). Reads grants,
    versions, toolsets and policies. Never raises for the database: a catalog not loaded is
    loaded by its first call."""
    started = time.monotonic()
    try:
        agents = agents_recently_calling(limit=WARM_AGENTS)
        for tenant_id, agent_id in agents:
            catalog = agent_catalog(tenant_id=tenant_id, agent_id=agent_id)
            for version in catalog.callable.values():
                try:
                    compiled_validator(version)
                except ToolHubError:
                    pass  # an unusable schema: its call is refused as it would have been
            invocation_series_start(catalog.callable)
            _catalog_views_warm(catalog)
    except DatabaseError as exc:
        logger.warning("agent catalogs not loaded at start: the database failed (%s)", type(exc).__name__)
        return
    logger.info("agent catalogs loaded at start: %d, in %d ms", len(agents),
                round((time.monotonic() - started) * 1000))


def _catalog_views_warm(catalog: AgentCatalog) -> None:
    """What a call sees of the catalog as a whole and in each toolset and phase: a code-run
    version there lists the tools beside it as Python signatures (about 0.5 ms to build)."""
    catalog.visible(None, None)
    for toolset, phases in catalog.toolsets.items():
        for phase in phases:
            catalog.visible(toolset, phase)


def mcp_sessions_warm_soon() -> threading.Thread:
    """mcp_sessions_warm on a daemon thread (returned): a serving process (a gunicorn worker
    once its application is loaded, a Celery worker process once forked) need not wait."""

    def run() -> None:
        try:
            mcp_sessions_warm()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, name="toolhub-mcp-warm", daemon=True)
    thread.start()
    return thread


def code_runs_warm_soon() -> None:
    """Start the process's warm sandboxes for code runs (run_python) in the background."""
    prewarm_sandboxes()
