"""Sessions with MCP servers, reused per tenant, upstream URL and credential within a process.

A handshake per call would cost an `initialize` round trip and a session each time, so each
process keeps one open session per tenant, upstream URL and credential, made on first use and
made again once it breaks. The calling tenant is part of the key even without a credential:
a server may keep state per session, which one tenant must never see of another's.

Every end user with a token of their own has sessions of their own, so the cache is bounded:
at most TOOLHUB_MCP_MAX_SESSIONS, the least recently used idle one closed past that, and any
session idle for TOOLHUB_MCP_SESSION_IDLE_S closed by a sweeper. Closing a session ends the
task holding it, which closes its HTTP clients and so releases its sockets. A session a call
is using is never closed under it; the cache may exceed its bound while all are in use.

Each session is held open by a task on the process's event loop (session.py). Tool calls are
sent from the calling thread (`called`): an open session is lent to the call straight from
`_LENDABLE`, and only a session still to be opened costs a hop to the loop (`lent`). The SDK's
own requests (listing tools) run on the loop (`on_session`). The cache is read and written
only on the loop's thread, so needs no lock; `_LENDABLE` is written there and read anywhere,
and lending is counted under each session's lock.

A call is sent once more, on a new session, only when nothing of it can have been applied
(`_worth_sending_again`): the server no longer knew the session, its request's connection
was refused, or it is a read. A serving process opens the sessions its granted tools use
when it starts (opened, warm.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import httpx2
from django.conf import settings
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from apps.common.compat.mcp_client import negotiate_auto
from apps.common.egress import EgressRefused

from ..base import AnswerTooLarge
from ..egress import AsyncEgressTransport, EgressTransport, deadline
from .session import LOOP, SESSION_ID_HEADER, Progress, Session, SessionKey, SessionLost, leaf

T = TypeVar("T")
logger = logging.getLogger("toolhub.egress")
# The SDK's defaults: a session's GET stream may stay quiet for minutes.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
# How often a stopped session's holder looks whether the calls that have it are over.
_RETIRE_POLL_S = 0.05



@dataclass(eq=False)
class _Cached:
    """A cached session (its opening task) and how it is used."""

    opening: asyncio.Task[Session]
    users: int = 0
    last_used: float = field(default_factory=time.monotonic)

    @property
    def session(self) -> Session | None:
        """The open session, None while it opens or when opening failed."""
        task = self.opening
        if not task.done() or task.cancelled() or task.exception() is not None:
            return None
        return task.result()

    @property
    def broken(self) -> bool:
        task = self.opening
        return task.done() and ((session := self.session) is None or not session.usable)

    @property
    def idle_since(self) -> float:
        session = self.session
        return max(self.last_used, session.last_lent) if session else self.last_used

    def close(self) -> None:
        """Stop the session (now, or as soon as it is open): its holder closes the client."""
        if self.opening.done():
            _stop(self.opening)
        else:
            self.opening.add_done_callback(_stop)


def _stop(opening: asyncio.Task[Session]) -> None:
    if not opening.cancelled() and opening.exception() is None:
        opening.result().stop.set()


# Opening or open sessions; touched only on the loop's thread.
_SESSIONS: dict[SessionKey, _Cached] = {}
# The open sessions calls may borrow from any thread (lent): written on the loop's thread only.
_LENDABLE: dict[SessionKey, Session] = {}
_SWEEPER: list[asyncio.Task[None]] = []


async def _open(url: str, headers: Mapping[str, str]) -> Session:
    ready: asyncio.Future[Session] = asyncio.get_running_loop().create_future()

    expired = threading.Event()
    session_ids: list[str] = []

    async def on_response(response: httpx2.Response) -> None:
        if response.status_code == 404 and SESSION_ID_HEADER in response.request.headers:
            expired.set()
        elif not session_ids and (session_id := response.headers.get(SESSION_ID_HEADER)):
            session_ids.append(session_id)  # the handshake's answer

    transport = _Transport()

    async def hold() -> None:
        session: Session | None = None
        calls = httpx2.Client(
            transport=EgressTransport(), headers=dict(headers), timeout=_HTTP_TIMEOUT, trust_env=False,
            follow_redirects=False,
        )
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
                    client, expired, transport, url, session_ids[0] if session_ids else None,
                    calls, asyncio.get_running_loop(),
                )
                ready.set_result(session)
                await session.stop.wait()
                # Closing ends the session on the server: not under a call that has it.
                await _retired(session)
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
                await _retired(session)
            calls.close()

    holder = asyncio.create_task(hold())
    try:
        return await ready
    finally:
        # Keep a reference to the holder for the session's life (the loop keeps weak ones).
        _HOLDERS.add(holder)
        holder.add_done_callback(_HOLDERS.discard)


_HOLDERS: set[asyncio.Task[None]] = set()


async def _retired(session: Session) -> None:
    """Once no call has the session, and none will be lent it."""
    while not session.retire():
        await asyncio.sleep(_RETIRE_POLL_S)


def _trim() -> None:
    """Close the idle sessions past the bound (least recently used first) and those idle for
    too long; forget broken ones. A session a call has is left for a later trim."""
    idle_limit = time.monotonic() - settings.TOOLHUB_MCP_SESSION_IDLE_S
    excess = len(_SESSIONS) - settings.TOOLHUB_MCP_MAX_SESSIONS
    for key, cached in sorted(_SESSIONS.items(), key=lambda item: item[1].idle_since):
        if cached.users or not (excess > 0 or cached.idle_since < idle_limit or cached.broken):
            continue
        session = cached.session
        if session is not None and not cached.broken and not session.retire():
            continue
        del _SESSIONS[key]
        _forget_lendable(key, session)
        cached.close()
        excess -= 1


def _forget_lendable(key: SessionKey, session: Session | None) -> None:
    if session is not None and _LENDABLE.get(key) is session:
        del _LENDABLE[key]


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
        if cached is not None:
            _forget_lendable(key, cached.session)
        # In a context of its own: its handshake and stream belong to no one call.
        opening = asyncio.get_running_loop().create_task(
            _open(key.url, dict(key.headers)), context=contextvars.Context()
        )
        cached = _SESSIONS[key] = _Cached(opening)
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
        if _SESSIONS.get(key) is cached and session.usable:
            _LENDABLE[key] = session
        yield session
    finally:
        cached.users -= 1
        cached.last_used = time.monotonic()
        _trim()


# The request the session's async client is sending (the SDK's own, on_session's: listing
# tools), from a task in its context, so the transport can tell it its connection was refused.
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
        except (MCPError, SessionLost) as exc:
            if (retry := _worth_sending_again(session, exc, progress, readonly=readonly)) is None:
                raise
        session.stop.set()
    _made_again(key, retry)
    progress.sent = progress.refused = False
    async with _held(key) as session:
        progress.sent = True
        return await _answered(session, request)


def called(
    key: SessionKey, call: Callable[[Session], T], progress: Progress, *, readonly: bool, timeout_s: float
) -> T:
    """`call`'s answer, sent from this thread on the session lent for `key`, every step of it
    within `timeout_s` (FutureTimeout while a session opens; httpx2's timeouts once sending);
    once more on a new session as on_session sends a request again."""
    ends = time.monotonic() + timeout_s
    with deadline(timeout_s):
        with lent(key, timeout_s=timeout_s) as session:
            progress.sent = True
            try:
                return call(session)
            except (MCPError, SessionLost) as exc:
                if (retry := _worth_sending_again(session, exc, progress, readonly=readonly)) is None:
                    raise
            session.give_up()
        _made_again(key, retry)
        progress.sent = progress.refused = False
        with lent(key, timeout_s=max(ends - time.monotonic(), 0.0)) as session:
            progress.sent = True
            return call(session)


def _worth_sending_again(
    session: Session, exc: MCPError | SessionLost, progress: Progress, *, readonly: bool
) -> str | None:
    """Why a request that failed so can be sent once more on a new session, None when it may
    have been applied: the server no longer knew the session (HTTP 404 on its id: a restart,
    or an expiry; it ran nothing), the connection of its request was refused (the server read
    none of it), or the call is readonly and its session broke or its answer broke off."""
    if isinstance(exc, SessionLost):
        if isinstance(exc.cause, EgressRefused) or not (readonly or progress.refused):
            return None
        return f"the session broke ({exc})"
    if session.expired.is_set():
        return "the server no longer knew the session"
    if progress.refused:
        return "the connection was refused"
    if readonly and exc.error.code == CONNECTION_CLOSED:
        return "a read's answer broke off"
    return None


def _made_again(key: SessionKey, why: str) -> None:
    logger.info("MCP session with %s made again, and the call sent once more: %s", _host(key.url), why)


@contextmanager
def lent(key: SessionKey, *, timeout_s: float) -> Iterator[Session]:
    """The open session for `key`, lent to a call made on this thread while the block runs;
    opened on the loop first when there is none (FutureTimeout past `timeout_s`). Raises
    SessionLost when the session opened broke before it could be lent."""
    session = _LENDABLE.get(key)
    if session is None or not session.lend():
        session = LOOP.submit(_opened(key), timeout_s=timeout_s)
        if not session.lend():
            raise SessionLost(session.error)
    try:
        yield session
    finally:
        session.give_back()


async def _opened(key: SessionKey) -> Session:
    async with _held(key) as session:
        return session


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
