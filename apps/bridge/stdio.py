"""A sandboxed child's pipes as the MCP SDK's session streams, read with bounds of our own.

The SDK's `stdio_client` reads stdout into a buffer that grows until a newline comes: a
server writing without newlines would exhaust the bridge's memory. Here stdout is read line
by line with a cap (TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES, asyncio's reader limit: it stops
reading the pipe past it), each line parsed with the SDK's `jsonrpc_message_adapter` into a
`SessionMessage` for the `ClientSession`; a line past the cap, or more than `MAX_JUNK_LINES`
lines that are not JSON-RPC, and the process is killed: the call in flight fails, the next
call gets a fresh process. Why the bridge stopped reading is `Child.failure`.

stderr goes to the log (logger `toolhub.bridge`), one record per line, each line clipped,
at most `STDERR_LINES_PER_S` a second (the rest counted, and the count logged), with the
credential's value replaced by [redacted].

Leaving `child_streams` stops the process: stdin closed (a well-behaved server exits), then,
after `STOP_GRACE_S`, bwrap killed: its PID namespace takes every process of the sandbox
with it (and the process's control group is killed too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter
from pydantic import ValidationError

from apps.common.logs import REDACTED

from .limits import ProcessGroup, preexec

logger = logging.getLogger("toolhub.bridge")

BWRAP = "/usr/bin/bwrap"
# bwrap's own environment: its arguments (and so the process's environment) come through a pipe.
BWRAP_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
MAX_JUNK_LINES = 100
JUNK_LOGGED = 5
STDERR_LINE_CHARS = 2000
STDERR_LINES_PER_S = 20
STDERR_BURST = 100
STOP_GRACE_S = 2.0
KILL_WAIT_S = 5.0
# A pipe holds 64 KiB: the arguments must fit, as they are written before bwrap reads them.
MAX_ARGS_BYTES = 60_000


@dataclass
class Child:
    """A running sandbox: bwrap's process, its control group, and why reading it stopped."""

    process: asyncio.subprocess.Process
    group: ProcessGroup
    label: str
    failure: str | None = None
    output_ended: asyncio.Event = field(default_factory=asyncio.Event)

    def kill(self, why: str) -> None:
        """Stop the sandbox now, for `why` (kept as the failure when it is the first)."""
        self.failure = self.failure or why
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.group.kill()


@asynccontextmanager
async def child_streams(
    args: list[str], command: tuple[str, ...], *, label: str, credential: str | None,
    limits: list[tuple[int, int, int]], group: ProcessGroup, max_line_bytes: int,
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception],
                         MemoryObjectSendStream[SessionMessage], Child]]:
    """Run `command` under bwrap with the options `args` (sandbox.bwrap_args) and yield the
    session's read and write streams and the child; stop it when the block ends."""
    args_read = filled_pipe(b"".join(arg.encode() + b"\0" for arg in args), what="the command and paths")
    try:
        process = await asyncio.create_subprocess_exec(
            BWRAP, "--args", str(args_read), "--", *command,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(args_read,), env=BWRAP_ENV, preexec_fn=preexec(limits, group),
            start_new_session=True, limit=max_line_bytes, cwd="/",
        )
    finally:
        os.close(args_read)
    child = Child(process, group, label)
    logger.info("%s: started, pid %s", label, process.pid)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    secret = credential or None
    tasks = [
        asyncio.ensure_future(_read_stdout(child, read_writer, max_line_bytes, secret)),
        asyncio.ensure_future(_write_stdin(child, write_reader, read_writer)),
        asyncio.ensure_future(_log_stderr(child, secret)),
    ]
    try:
        yield read_stream, write_stream, child
    finally:
        await asyncio.shield(_stop(child, tasks))
        for stream in (read_stream, write_stream):
            stream.close()


def filled_pipe(data: bytes, *, what: str) -> int:
    """The read end of a pipe holding `data` and then its end, for bwrap to read from a
    descriptor it inherits (`--args FD`, `--seccomp FD`); the caller closes it once bwrap runs."""
    if len(data) > MAX_ARGS_BYTES:
        raise ValueError(f"{what} take {len(data)} bytes, more than {MAX_ARGS_BYTES}")
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        # Closed once, at once: a descriptor number closed twice may be another's by then.
        os.close(write_end)
    return read_end


async def _stop(child: Child, tasks: Sequence[asyncio.Future[None]]) -> None:
    process = child.process
    if process.stdin is not None:
        with contextlib.suppress(OSError, RuntimeError):
            process.stdin.close()
    if not await _exited(process, STOP_GRACE_S):
        child.kill("stopped")
        if not await _exited(process, KILL_WAIT_S):
            logger.warning("%s: pid %s still alive after SIGKILL", child.label, process.pid)
    child.group.kill()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.to_thread(child.group.remove)
    logger.info("%s: ended (exit status %s)", child.label, process.returncode)


async def _exited(process: asyncio.subprocess.Process, timeout_s: float) -> bool:
    """Whether the process ended within `timeout_s` (polled: `wait()` also waits for pipes)."""
    deadline = time.monotonic() + timeout_s
    while process.returncode is None:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def _hidden(text: str, secret: str | None) -> str:
    return text.replace(secret, REDACTED) if secret else text


async def _read_stdout(
    child: Child, sink: MemoryObjectSendStream[SessionMessage | Exception], max_line_bytes: int,
    secret: str | None,
) -> None:
    stdout = child.process.stdout
    assert stdout is not None
    junk = 0
    try:
        while True:
            try:
                line = await stdout.readuntil(b"\n")
            except asyncio.IncompleteReadError:
                child.failure = child.failure or "it closed its output (exited)"
                return
            except asyncio.LimitOverrunError:
                child.kill(f"it wrote a line of more than {max_line_bytes} bytes")
                logger.warning("%s: killed: %s", child.label, child.failure)
                return
            if not line.strip():
                continue
            try:
                message = jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValidationError:
                junk += 1
                if junk <= JUNK_LOGGED:
                    text = _hidden(line.decode(errors="replace"), secret)[:200]
                    logger.warning("%s: stdout line that is not JSON-RPC, skipped: %r", child.label, text)
                if junk > MAX_JUNK_LINES:
                    child.kill(f"it wrote more than {MAX_JUNK_LINES} lines that are not JSON-RPC")
                    logger.warning("%s: killed: %s", child.label, child.failure)
                    return
                continue
            try:
                await sink.send(SessionMessage(message))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
    finally:
        child.output_ended.set()
        await sink.aclose()


async def _write_stdin(
    child: Child, source: MemoryObjectReceiveStream[SessionMessage],
    sink: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    stdin = child.process.stdin
    assert stdin is not None
    try:
        async with source:
            async for message in source:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                stdin.write(data.encode() + b"\n")
                await stdin.drain()
    except (ConnectionError, OSError, RuntimeError):
        # The process closed its input (or ended): the session must see the end.
        child.failure = child.failure or "it closed its input"
        await sink.aclose()


async def _log_stderr(child: Child, secret: str | None) -> None:
    """stderr, a record per line: clipped, rate-bounded, without the credential."""
    stderr = child.process.stderr
    assert stderr is not None
    tokens = float(STDERR_BURST)
    refilled = time.monotonic()
    dropped = 0
    pending = b""
    while True:
        try:
            chunk = await asyncio.wait_for(stderr.read(65536), timeout=1.0)
        except TimeoutError:
            # A quiet second: say how many lines of the last burst were not logged.
            if dropped:
                logger.warning("%s: %s stderr lines not logged (more than %s a second)",
                               child.label, dropped, STDERR_LINES_PER_S)
                dropped = 0
            continue
        if not chunk:
            lines = [pending] if pending else []
        else:
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            if len(pending) > STDERR_LINE_CHARS * 4:
                # A line without end: log what came so far as a line of its own.
                lines.append(pending)
                pending = b""
        now = time.monotonic()
        tokens = min(STDERR_BURST, tokens + (now - refilled) * STDERR_LINES_PER_S)
        refilled = now
        for raw in lines:
            if tokens < 1:
                dropped += 1
                continue
            tokens -= 1
            if dropped:
                logger.warning("%s: %s stderr lines not logged (more than %s a second)",
                               child.label, dropped, STDERR_LINES_PER_S)
                dropped = 0
            text = _hidden(raw.decode(errors="replace").rstrip("\r"), secret)
            logger.info("%s stderr: %s", child.label, text[:STDERR_LINE_CHARS])
        if not chunk:
            if dropped:
                logger.warning("%s: %s stderr lines not logged", child.label, dropped)
            return
