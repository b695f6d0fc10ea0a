"""Sessions with MCP servers, reused per tenant, upstream URL and credential within a process.

A handshake per call would cost an `initialize` round trip and a session each time, so each
process keeps one open session per tenant, upstream URL and credential, made on first use and
made again once it breaks. The calling tenant is part of the key even without a credential:
a server may keep state per session, which one tenant must never see of another's.

Every end user with a token of their own has sessions of their own, so the cache is bounded:
at most TOOLHUB_MCP_MAX_SESSIONS, the least recently used idle one closed past that, and any
session idle for TOOLHUB_MCP_SESSION_IDLE_S closed by a sweeper. Closing a session ends the
task holding it, which closes its HTTP client and so releases its sockets. A session a call
is using is never closed under it; the cache may exceed its bound while all are in use.

The SDK client is async and its sessions live in anyio task groups, which must be entered and
left by one task: every session is held open by a task of its own on one background event
loop (`Loop`), and callers submit coroutines to that loop and wait for them up to the
tool's timeout. The cache is read and written only on the loop's thread, so needs no lock.

A call is sent once more, on a new session, only when nothing of it can have been applied
(on_session): the server no longer knew the session, its request's connection was refused
(the session's transport marks the call, whose context sends it), or it is a read.
A serving process opens the sessions its granted tools use when it starts (opened, warm.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import httpx2
from django.conf import settings
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from apps.common.compat.mcp_client import negotiate_auto
from apps.common.egress import EgressRefused

from ..base import AnswerTooLarge
from ..egress import AsyncEgressTransport

T = TypeVar("T")
logger = logging.getLogger("toolhub.egress")
# The SDK's defaults: a session's GET stream may stay quiet for minutes.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
SESSION_ID_HEADER = "mcp-session-id"



class SessionKey(NamedTuple):
    """Who may share a session: calls of one tenant to one URL with the same credential."""

    tenant_id: int | None
    url: str
    headers: tuple[tuple[str, str], ...]


class Loop:
    """One event loop on a daemon thread, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def submit(self, coroutine: Coroutine[Any, Any, T], *, timeout_s: float) -> T:
        """The coroutine's result; FutureTimeout (the coroutine cancelled) after `timeout_s`."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._running())
        try:
            return future.result(timeout=timeout_s)
        except FutureTimeout:
            future.cancel()
            raise

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="toolhub-mcp", daemon=True).start()
            return self._loop


LOOP = Loop()


@dataclass(eq=False)
class Session:
    """An initialized client session and the task holding it open."""

    client: ClientSession
    # Set when the server answered 404 to this session's id: it no longer knows the session
    # (restarted, or expired it) and ran nothing of that request.
    expired: asyncio.Event
    transport: AsyncEgressTransport
    # The session's HTTP client and endpoint, on which calls are sent (tool_call.py), and the
    # id a server of the handshake revisions gave it (None on 2026-07-28, which has none).
    http: httpx2.AsyncClient
    url: str
    session_id: str | None
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    error: BaseException | None = None

    @property
    def usable(self) -> bool:
        return not (self.expired.is_set() or self.stop.is_set() or self.ended.is_set())


class SessionLost(Exception):
    """The session broke while a call was in flight."""

    def __init__(self, cause: BaseException | None) -> None:
        super().__init__(type(cause).__name__ if cause else "session closed")
        self.cause = cause


@dataclass(eq=False)
class _Cached:
    """A cached session (its opening task) and how it is used."""

    opening: asyncio.Task[Session]
    users: int = 0
    last_used: float = field(default_factory=time.monotonic)

    @property
    def broken(self) -> bool:
        task = self.opening
        return task.done() and (task.cancelled() or task.exception() is not None or not task.result().usable)

    def close(self) -> None:
        """Stop the session (now, or as soon as it is open): its holder closes the client."""
        if self.opening.done():
            _stop(self.opening)
        else:
            self.opening.add_done_callback(_stop)


def _stop(opening: asyncio.Task[Session]) -> None:
    if not opening.cancelled() and opening.exception() is None:
        opening.result().stop.set()


# Opening or open sessions, least recently used first; touched only on the loop's thread.
_SESSIONS: OrderedDict[SessionKey, _Cached] = OrderedDict()
_SWEEPER: list[asyncio.Task[None]] = []


async def _open(url: str, headers: Mapping[str, str]) -> Session:
    ready: asyncio.Future[Session] = asyncio.get_running_loop().create_future()

    expired = asyncio.Event()
    session_ids: list[str] = []

    async def on_response(response: httpx2.Response) -> None:
        if response.status_code == 404 and SESSION_ID_HEADER in response.request.headers:
            expired.set()
        elif not session_ids and (session_id := response.headers.get(SESSION_ID_HEADER)):
            session_ids.append(session_id)  # the handshake's answer

    transport = _Transport()

    async def hold() -> None:
        session: Session | None = None
        try:
            async with (
                httpx2.AsyncClient(
                    transport=transport,
                    headers=dict(headers), timeout=_HTTP_TIMEOUT, trust_env=False, follow_redirects=False,
                    event_hooks={"response": [on_response]},
                ) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as client,
            ):
                # The SDK client's own connect policy (what `mcp.Client` runs by default):
                # server/discover at the newest revision, the initialize handshake with a server
                # that does not answer it, so each upstream is spoken to on the newest it serves.
                await negotiate_auto(client)
                session = Session(
                    client, expired, transport, http, url, session_ids[0] if session_ids else None
                )
                ready.set_result(session)
                await session.stop.wait()
        except Exception as exc:  # noqa: BLE001 - a broken session, whatever broke it
            cause = leaf(exc)
            if not ready.done():
                ready.set_exception(cause)
            elif session is not None:
                session.error = cause
        finally:
            if not ready.done():
                ready.set_exception(SessionLost(None))
            if session is not None:
                session.ended.set()

    holder = asyncio.create_task(hold())
    try:
        return await ready
    finally:
        # Keep a reference to the holder for the session's life (the loop keeps weak ones).
        _HOLDERS.add(holder)
        holder.add_done_callback(_HOLDERS.discard)


_HOLDERS: set[asyncio.Task[None]] = set()


def leaf(exc: BaseException) -> BaseException:
    """The first error inside an exception group (anyio's task groups wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _trim() -> None:
    """Close the idle sessions past the bound (least recently used first) and those idle for
    too long; forget broken ones."""
    idle_limit = time.monotonic() - settings.TOOLHUB_MCP_SESSION_IDLE_S
    excess = len(_SESSIONS) - settings.TOOLHUB_MCP_MAX_SESSIONS
    for key, cached in list(_SESSIONS.items()):
        if cached.users:
            continue
        if excess > 0 or cached.last_used < idle_limit or cached.broken:
            del _SESSIONS[key]
            cached.close()
            excess -= 1


async def _sweep() -> None:
    """Close idle sessions while there are any: without calls, nothing else would. A tick of a
    second at most walks at most the bound's sessions: cheap, and a changed idle time applies."""
    while _SESSIONS:
        await asyncio.sleep(min(max(settings.TOOLHUB_MCP_SESSION_IDLE_S / 2, 0.05), 1.0))
        _trim()


def _cached(key: SessionKey) -> _Cached:
    """The cache entry for `key`: the cached one unless it broke, else a new one (callers
    arriving while it opens share the one handshake)."""
    cached = _SESSIONS.get(key)
    if cached is None or cached.broken:
        # In a context of its own: its handshake and stream belong to no one call.
        opening = asyncio.get_running_loop().create_task(
            _open(key.url, dict(key.headers)), context=contextvars.Context()
        )
        cached = _SESSIONS[key] = _Cached(opening)
    _SESSIONS.move_to_end(key)
    if not _SWEEPER or _SWEEPER[0].done():
        _SWEEPER[:] = [asyncio.get_running_loop().create_task(_sweep())]
    return cached


@asynccontextmanager
async def _held(key: SessionKey) -> AsyncIterator[Session]:
    """The open session for `key`, kept open (never trimmed) while the block runs."""
    cached = _cached(key)
    cached.users += 1
    try:
        try:
            session = await asyncio.shield(cached.opening)
        except Exception:
            if _SESSIONS.get(key) is cached:
                del _SESSIONS[key]
            raise
        yield session
    finally:
        cached.users -= 1
        cached.last_used = time.monotonic()
        _trim()


@dataclass
class Progress:
    """How far one call got: `sent` once it was handed to an open session; `refused` when its
    request's connection was refused, so the server read none of it."""

    sent: bool = False
    refused: bool = False


# The call whose request the session's client is sending: a call is sent from the caller's
# task (tool_call.py; the SDK's requests from a task in its context), so the transport can tell
# that call what happened.
_CALLING: contextvars.ContextVar[Progress | None] = contextvars.ContextVar("mcp_calling", default=None)


class _Transport(AsyncEgressTransport):
    """The session's transport, which marks the call whose request could not connect."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await super().handle_async_request(request)
        except (httpx2.ConnectError, httpx2.ConnectTimeout):
            if request.method == "POST" and (progress := _CALLING.get()) is not None:
                progress.refused = True
            raise


async def on_session(
    key: SessionKey, request: Callable[[Session], Awaitable[T]], progress: Progress, *, readonly: bool = False
) -> T:
    """`request`'s answer on the cached session; once more on a new session when nothing of it
    can have been applied: the server no longer knew the cached session (HTTP 404 on its id: a
    restart, or an expiry; it ran nothing), the connection of its request was refused (the
    server read none of it), or the call is readonly and its session broke or its answer broke
    off (sending a read again changes nothing). A write whose request may have reached the
    server is never sent again."""
    _CALLING.set(progress)
    async with _held(key) as session:
        progress.sent = True
        try:
            return await _answered(session, request)
        except MCPError as exc:
            if session.expired.is_set():
                retry = "the server no longer knew the session"
            elif progress.refused:
                retry = "the connection was refused"
            elif readonly and exc.error.code == CONNECTION_CLOSED:
                retry = "a read's answer broke off"
            else:
                raise
        except SessionLost as exc:
            if isinstance(exc.cause, EgressRefused) or not (readonly or progress.refused):
                raise
            retry = f"the session broke ({exc})"
        session.stop.set()
    logger.info("MCP session with %s made again, and the call sent once more: %s", _host(key.url), retry)
    progress.sent = progress.refused = False
    async with _held(key) as session:
        progress.sent = True
        return await _answered(session, request)


def _host(url: str) -> str:
    """The URL without its query: an upstream's credential may travel in it."""
    return url.split("?", 1)[0]


async def opened(keys: list[SessionKey], *, timeout_s: float) -> list[BaseException | None]:
    """Open (or keep) the session of each key, all at once, waiting at most `timeout_s`; for
    each, None or what failed (TimeoutError: still opening, and cached once open)."""

    async def one(key: SessionKey) -> None:
        async with _held(key):
            pass

    tasks = [asyncio.ensure_future(one(key)) for key in keys]
    done, pending = await asyncio.wait(tasks, timeout=timeout_s)
    for task in pending:
        task.cancel()
    return [
        (leaf(error) if (error := task.exception()) else None) if task in done else TimeoutError()
        for task in tasks
    ]


async def _answered(session: Session, request: Callable[[Session], Awaitable[T]]) -> T:
    """`request`'s answer; AnswerTooLarge when it failed because an answer went past the byte
    limit (reported as a parse error, or a stream that ended without an answer)."""
    cut_off = session.transport.cut_off
    try:
        return await request(session)
    except Exception:
        if session.transport.cut_off > cut_off:
            raise AnswerTooLarge(settings.TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES) from None
        raise
