"""The bridge's processes: one per key, started on first use, kept, stopped when idle,
started again with backoff after dying.

A key is whose the process is (the request's path: upstream, tenant, end user) and a digest
of what it runs (the launch spec) and with which credential: a changed launcher or a new
credential makes a new process, and no two tenants or end users ever share one.

`Supervisor.acquire` answers the running process of a key, starting it (bwrap, then the MCP
handshake with the SDK's ClientSession: `server/discover`, or `initialize` with an older
server) when there is none. A process that cannot be started, or died by itself (exited,
killed for what it wrote, past its CPU time), is not started again before its backoff ends:
1 s after the first failure, doubling up to `BACKOFF_MAX_S`, forgotten once a process has
run `BACKOFF_RESET_S`. Meanwhile `acquire` raises `Unavailable` at once, saying when calling
again may help. A process without requests for its launcher's `idle_stop_s` is stopped,
and its scratch directory deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import secrets
import shutil
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    PaginatedRequestParams,
    Tool,
)
from pydantic import ValidationError

from apps.common.compat.mcp_client import negotiate_auto
from apps.upstreams.bridge import NOT_RUNNING, PROCESS_STOPPED, ProcessAddress

from .limits import Cgroups
from .sandbox import MIB, LaunchSpec, bwrap_args, host_view, rlimits
from .stdio import Child, child_streams

logger = logging.getLogger("toolhub.bridge")

START_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 600.0
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0
BACKOFF_RESET_S = 60.0
SWEEP_S = 0.5
MAX_TOOL_PAGES = 100
_KEY_SECRET = secrets.token_bytes(32)


class Unavailable(Exception):
    """No process to send the request to; nothing was sent. `retry_after_s`: when calling
    again may help."""

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_s = retry_after_s


class ProcessGone(Exception):
    """The process stopped while a request was in flight: it may have run."""


@dataclass(frozen=True)
class ProcessKey:
    address: ProcessAddress
    digest: str

    @classmethod
    def of(cls, address: ProcessAddress, spec: LaunchSpec, credential: str | None) -> ProcessKey:
        # Keyed with a secret of this bridge's: the digest shows in file names and logs, and a
        # plain hash of a known spec and a weak credential could be reversed by trying.
        what = json.dumps({"spec": asdict(spec), "credential": credential}, sort_keys=True)
        return cls(address, hmac.new(_KEY_SECRET, what.encode(), hashlib.sha256).hexdigest())

    @property
    def name(self) -> str:
        """A file and log name: whose process, and a short digest (never the credential)."""
        tenant = "platform" if self.address.tenant_id is None else str(self.address.tenant_id)
        subject = self.address.subject_key[:12] or "-"
        return f"u{self.address.upstream_id}-{tenant}-{subject}-{self.digest[:12]}"


@dataclass(eq=False)
class Managed:
    """One process and the session with it, held open by a task of its own (`hold`)."""

    key: ProcessKey
    spec: LaunchSpec
    credential: str | None
    scratch: Path
    ready: asyncio.Future[None]
    session: ClientSession | None = None
    child: Child | None = None
    started_at: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    in_flight: int = 0
    stopping: bool = False
    # What went wrong in the bridge's own handling of it (bwrap could not be run, ...).
    error: str | None = None
    stop_event: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    # Set once the supervisor is done with it (backoff noted, scratch directory deleted).
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def ending(self) -> bool:
        """Stopped, or stopping, or its process is gone: no request may be sent to it."""
        child = self.child
        gone = child is not None and (child.output_ended.is_set() or child.failure is not None)
        return self.stopping or self.stop_event.is_set() or self.ended.is_set() or gone

    @property
    def label(self) -> str:
        return f"{self.spec.launcher} {self.key.name}"

    @property
    def failure(self) -> str:
        """Why it ended, for people: what the bridge saw, and its exit status once known."""
        why = (self.child.failure if self.child else None) or self.error or "it ended"
        status = self.child.process.returncode if self.child else None
        # bwrap answers its command's death by a signal as 128 + the signal's number.
        if status is not None and (status < 0 or status > 128):
            number = -status if status < 0 else status - 128
            name = signal.Signals(number).name if number in signal.valid_signals() else str(number)
            why += f"; killed by signal {name}"
        elif status:
            why += f"; exit status {status}"
        return why

    async def hold(self, cgroups: Cgroups, max_line_bytes: int) -> None:
        """Start the process, hand the session over (`ready`), keep it until told to stop or
        the process ends, then stop it."""
        group = cgroups.group(
            self.key.name, max_processes=self.spec.max_processes, memory_bytes=self.spec.memory_mb * MIB
        )
        try:
            args = bwrap_args(self.spec, scratch=self.scratch, credential=self.credential,
                              host=host_view(self.spec))
            async with (
                child_streams(
                    args, self.spec.command, label=self.label, credential=self.credential,
                    limits=rlimits(self.spec), group=group, max_line_bytes=max_line_bytes,
                ) as (read, write, child),
                ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT_S) as session,
            ):
                self.child = child
                with anyio.fail_after(START_TIMEOUT_S):
                    await negotiate_auto(session)
                self.session = session
                self.ready.set_result(None)
                stop = asyncio.ensure_future(self.stop_event.wait())
                ended = asyncio.ensure_future(child.output_ended.wait())
                try:
                    await asyncio.wait({stop, ended}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stop.cancel()
                    ended.cancel()
        except Exception as exc:  # noqa: BLE001 - whatever failed, the process is gone
            if self.child is None or self.child.failure is None:
                self.error = _reason(exc)
            logger.warning("%s: %s: %s", self.label, "session ended" if self.ready.done() else
                           "could not start", self.failure)
            if not self.ready.done():
                self.ready.set_exception(Unavailable(self.failure, retry_after_s=0))
        finally:
            if not self.ready.done():
                self.ready.set_exception(Unavailable("it was stopped while starting", retry_after_s=0))
            await asyncio.to_thread(group.remove)
            self.ended.set()

    async def list_tools(self) -> list[Tool]:
        """Every tool the process lists, all pages."""
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self._request(self._session().list_tools(params=params))
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                return tools
        raise MCPError(INTERNAL_ERROR, f"the server listed more than {MAX_TOOL_PAGES} pages of tools")

    async def call_tool(self, name: str, arguments: dict[str, Any] | None) -> CallToolResult:
        """The process's answer to `tools/call`, as it gave it (no output-schema check: that is
        ToolHub's to do); its JSON-RPC errors raised as they came."""
        request = CallToolRequest(params=CallToolRequestParams(name=name, arguments=arguments))
        try:
            return await self._request(
                self._session().send_request(
                    request, CallToolResult, request_read_timeout_seconds=CALL_TIMEOUT_S
                )
            )
        except ValidationError:
            raise MCPError(INTERNAL_ERROR, "the server answered tools/call with something that is not a "
                           "tool result; the tool may have run") from None

    def _session(self) -> ClientSession:
        if self.session is None or self.ending:
            # Nothing of this request was written to the process.
            raise Unavailable(
                f"The MCP server {self.spec.launcher} stopped ({self.failure}); nothing was sent to it. "
                "Calling again in a moment may work.", retry_after_s=BACKOFF_FIRST_S,
            )
        return self.session

    async def _request(self, awaitable: Any) -> Any:
        try:
            return await awaitable
        except MCPError as exc:
            child = self.child
            ended = child is not None and (child.output_ended.is_set() or child.failure is not None)
            if self.stop_event.is_set() or ended:
                raise ProcessGone(self.failure) from None
            data = exc.error.data
            if isinstance(data, dict) and data.get("reason") in (NOT_RUNNING, PROCESS_STOPPED):
                # Only the bridge says why it could not serve: a server saying so is quoted.
                raise MCPError(exc.error.code, exc.error.message, data={"server_data": data}) from None
            raise


@dataclass
class _Backoff:
    failures: int
    retry_at: float
    reason: str
    had_started: bool


class Supervisor:
    """The processes of one bridge. Used on the event loop's thread only: no lock."""

    def __init__(self, *, scratch_root: Path, cgroups: Cgroups, max_line_bytes: int) -> None:
        self.scratch_root = scratch_root
        self.cgroups = cgroups
        self.max_line_bytes = max_line_bytes
        self._processes: dict[ProcessKey, Managed] = {}
        self._backoff: dict[ProcessKey, _Backoff] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._processes)

    @contextlib.asynccontextmanager
    async def serving(
        self, key: ProcessKey, spec: LaunchSpec, credential: str | None
    ) -> AsyncIterator[Managed]:
        """The running process of `key`, started if need be, kept from being stopped for
        idleness while the block runs. Raises Unavailable."""
        managed = self._processes.get(key)
        if managed is not None and managed.ending:
            # Ending: its bookkeeping (backoff, scratch directory) comes before a new start.
            await managed.done.wait()
            managed = self._processes.get(key)
        if managed is None:
            managed = self._start(key, spec, credential)
        managed.in_flight += 1
        try:
            try:
                await asyncio.wait_for(asyncio.shield(managed.ready), START_TIMEOUT_S + 5)
            except (Unavailable, TimeoutError):
                if managed.child is not None and not managed.ready.done():
                    managed.child.kill("it did not answer the handshake in time")
                managed.stop_event.set()
                await managed.done.wait()
                raise self._not_running(key, spec) from None
            yield managed
        finally:
            managed.in_flight -= 1
            managed.last_used = time.monotonic()

    def _not_running(self, key: ProcessKey, spec: LaunchSpec) -> Unavailable:
        backoff = self._backoff.get(key)
        if backoff is None:
            return Unavailable(f"The MCP server {spec.launcher} was stopped while starting; nothing was "
                               "sent to it. Calling again may work.", retry_after_s=BACKOFF_FIRST_S)
        wait = max(backoff.retry_at - time.monotonic(), 0)
        what = "stopped" if backoff.had_started else "could not be started"
        return Unavailable(
            f"The MCP server {spec.launcher} {what} ({backoff.reason}); nothing was sent to it. It is "
            f"started again in {wait:.0f} s: calling again after that may work.",
            retry_after_s=wait,
        )

    def _start(self, key: ProcessKey, spec: LaunchSpec, credential: str | None) -> Managed:
        if (backoff := self._backoff.get(key)) and backoff.retry_at > time.monotonic():
            raise self._not_running(key, spec)
        scratch = self.scratch_root / key.name
        scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
        scratch.chmod(0o700)
        loop = asyncio.get_running_loop()
        managed = Managed(key, spec, credential, scratch, ready=loop.create_future())
        self._processes[key] = managed
        task = loop.create_task(self._run(managed))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return managed

    async def _run(self, managed: Managed) -> None:
        try:
            await managed.hold(self.cgroups, self.max_line_bytes)
            if managed.stopping:
                # Stopped for idleness or shutdown: what it wrote goes with it.
                await asyncio.to_thread(shutil.rmtree, managed.scratch, True)
                return
            # It died by itself, or could not start: back off before starting it again.
            now = time.monotonic()
            previous = self._backoff.get(managed.key)
            lived = now - managed.started_at > BACKOFF_RESET_S
            failures = 1 if previous is None or lived else previous.failures + 1
            delay = min(BACKOFF_FIRST_S * 2 ** (failures - 1), BACKOFF_MAX_S)
            had_started = managed.ready.done() and managed.ready.exception() is None
            self._backoff[managed.key] = _Backoff(failures, now + delay, managed.failure, had_started)
            logger.warning("%s: stopped by itself (%s); started again on a request after %.0f s",
                           managed.label, managed.failure, delay)
        finally:
            if self._processes.get(managed.key) is managed:
                del self._processes[managed.key]
            managed.done.set()

    def _stop(self, managed: Managed) -> None:
        managed.stopping = True
        managed.stop_event.set()

    async def sweep(self) -> None:
        """Stop the processes idle for their launcher's idle_stop_s, and forget old backoffs."""
        while True:
            await asyncio.sleep(SWEEP_S)
            now = time.monotonic()
            for managed in list(self._processes.values()):
                idle = now - managed.last_used > managed.spec.idle_stop_s
                if idle and not managed.in_flight and managed.ready.done() and not managed.stopping:
                    logger.info("%s: idle for %s s, stopped", managed.label, managed.spec.idle_stop_s)
                    self._stop(managed)
            for key, backoff in list(self._backoff.items()):
                if now - backoff.retry_at > BACKOFF_RESET_S:
                    del self._backoff[key]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Sweep while the block runs; then stop every process and wait for them to end."""
        sweeper = asyncio.ensure_future(self.sweep())
        try:
            yield
        finally:
            sweeper.cancel()
            for managed in list(self._processes.values()):
                self._stop(managed)
            if self._tasks:
                await asyncio.wait(list(self._tasks), timeout=15)
            self.cgroups.close()


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return f"it ended the handshake: {exc.message}"
    if isinstance(exc, TimeoutError):
        return "it did not answer the handshake in time"
    return f"{type(exc).__name__}: {exc}"[:300]
