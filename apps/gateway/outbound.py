"""The gateway's outbound calls that other apps may make: the public face of the executors.

Every connection ToolHub opens goes through the egress policy and the answer limit of
executors/ (egress.py, answer_limit.py). An app above the gateway that must reach the outside
world (the imports fetch documents and list MCP servers; the bench relays a provider's
answer) calls these functions and never an executor's internals, so the executors can change
shape freely.
"""

from __future__ import annotations

import httpx

from apps.common.egress import EgressRefused

from .executors.answer_limit import ResponseTooLarge
from .executors.egress import EgressTransport
from .executors.http.executor import shared_client
from .executors.mcp.executor import ListingFailed, list_mcp_tools

__all__ = [
    "FetchFailed",
    "FetchRefused",
    "FetchTooLarge",
    "FetchUnanswered",
    "FetchUnsuccessful",
    "ListingFailed",
    "fetch_document",
    "http_client",
    "list_mcp_tools",
]

USER_AGENT = "ToolHub/1"


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
        with httpx.Client(
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
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise FetchUnanswered(type(exc).__name__) from None


def http_client() -> httpx.Client:
    """The http executor's own client (its connection pool, the egress transport, no
    redirects): for a caller that must measure or share exactly what tool calls use. Each
    request must pass a timeout."""
    return shared_client()

