"""One session with an MCP server, as the calls that borrow it see it, and the event loop
that holds every session of the process (sessions.py keeps them).

The SDK client is async and its sessions live in anyio task groups, which must be entered and
left by one task: every session is held open by a task of its own on one background event
loop (`Loop`). Its calls need no loop: they are sent from the calling thread on the session's
client for calls (tool_call.py), borrowing the session (`lend`, `give_back`), which is never
closed while a call has it. A call that finds the session broken gives it up, from any thread.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import httpx2
from mcp.client.session import ClientSession

from ..egress import AsyncEgressTransport

T = TypeVar("T")
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
    """An initialized client session and the task holding it open.

    The SDK's side of it (handshake, revision, server messages, closing) lives on the loop;
    calls are sent from the calling thread on `calls` (tool_call.py), a client of the same
    headers, egress policy and answer limit, without a hop to the loop and back. A session
    is lent to those calls (`lent`) and never closed while one has it.
    """

    client: ClientSession
    # Set, from any thread, when the server answered 404 to this session's id: it no longer
    # knows the session (restarted, or expired it) and ran nothing of that request.
    expired: threading.Event
    # The transport of the SDK's requests; the endpoint, and the id a server of the handshake
    # revisions gave the session (None on 2026-07-28, which has none).
    transport: AsyncEgressTransport
    url: str
    session_id: str | None
    calls: httpx2.Client
    loop: asyncio.AbstractEventLoop
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    error: BaseException | None = None
    # Set from any thread: a call found the session broken, or unknown to the server.
    given_up: bool = False
    # Calls that have it now, when the last one gave it back, and whether it is being closed
    # (lent to no call again); under `lock`, as calls come from any thread.
    lent_to: int = 0
    last_lent: float = field(default_factory=time.monotonic)
    retired: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def usable(self) -> bool:
        return not (
            self.given_up or self.expired.is_set() or self.stop.is_set() or self.ended.is_set()
        )

    def give_up(self) -> None:
        """From any thread: lend the session to no further call, and have its holder close it
        once the calls that have it are over."""
        self.given_up = True
        self.loop.call_soon_threadsafe(self.stop.set)

    def lend(self) -> bool:
        """Lend the session to one more call, unless it is closing or broken."""
        with self.lock:
            if self.retired or not self.usable:
                return False
            self.lent_to += 1
            return True

    def give_back(self) -> None:
        with self.lock:
            self.lent_to -= 1
            self.last_lent = time.monotonic()

    def retire(self) -> bool:
        """Lend the session no more, if no call has it now (True); else leave it be."""
        with self.lock:
            if self.lent_to:
                return False
            self.retired = True
            return True


class SessionLost(Exception):
    """The session broke while a call was in flight."""

    def __init__(self, cause: BaseException | None) -> None:
        super().__init__(type(cause).__name__ if cause else "session closed")
        self.cause = cause


def leaf(exc: BaseException) -> BaseException:
    """The first error inside an exception group (anyio's task groups wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


@dataclass
class Progress:
    """How far one call got: `sent` once it was handed to an open session; `refused` when its
    request's connection was refused, so the server read none of it."""

    sent: bool = False
    refused: bool = False
