"""One sandbox: bwrap running the runner (runner.py) under isolation.py's confinement, and
the channel to it, read with bounds.

The channel is read as apps/bridge/stdio.py reads a stdio server: never an unbounded line
(a line past `max_line_bytes` breaks the channel and the sandbox is killed), and never
without a deadline (the run's wall time): both ends are non-blocking and polled, so code
that stops reading its input or floods its output cannot stall ToolHub.

A sandbox serves one run. `close` kills whatever is left of it (bwrap's PID namespace and
its control group take every process with them) and deletes its directory: the scratch
directory the code saw as HOME, and bwrap's stderr, kept beside it for the log.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apps.bridge.limits import Cgroups, ProcessGroup, preexec
from apps.bridge.sandbox import MIB
from apps.bridge.stdio import BWRAP, BWRAP_ENV, filled_pipe

from .isolation import (
    BWRAP_PROCESSES,
    PYTHON_FLAGS,
    SandboxUnavailable,
    SpawnLimits,
    bwrap_args,
    host_view,
    python_layout,
    rlimits,
    seccomp_program,
)

logger = logging.getLogger("toolhub.sandbox")

START_TIMEOUT_S = 10.0
EXIT_WAIT_S = 1.0
KILL_WAIT_S = 5.0
STDERR_LOGGED_BYTES = 2000
MESSAGES = frozenset({"ready", "out", "call", "done"})


class ChannelClosed(Exception):
    """The sandbox closed its end (it exited, or was killed)."""


class ChannelTimeout(Exception):
    """The deadline passed before a whole line came (or could be written)."""


class ChannelBroken(Exception):
    """What came is not a message of the runner: the code wrote on the channel itself."""


@functools.cache
def runner_source() -> str:
    return (Path(__file__).with_name("runner.py")).read_text()


@dataclass(eq=False)
class Sandbox:
    process: subprocess.Popen[bytes]
    group: ProcessGroup
    directory: Path
    limits: SpawnLimits
    max_line_bytes: int
    started_at: float = field(default_factory=time.monotonic)
    cpu_s: float = 0.0
    _buffer: bytearray = field(default_factory=bytearray)
    _scanned: int = 0

    @classmethod
    def start(
        cls, *, limits: SpawnLimits, scratch_root: Path, cgroups: Cgroups, max_line_bytes: int,
    ) -> Sandbox:
        """A sandbox whose runner said it is ready; SandboxUnavailable when none can start."""
        if not os.access(BWRAP, os.X_OK):
            raise SandboxUnavailable(f"{BWRAP} is not installed: code mode needs bubblewrap")
        layout = python_layout()
        program = seccomp_program()
        directory = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=scratch_root))
        home = directory / "home"
        home.mkdir()
        group = cgroups.group(directory.name, max_processes=limits.max_processes + BWRAP_PROCESSES,
                              memory_bytes=limits.memory_mb * MIB)
        try:
            process = _spawn(layout.executable, limits, group, directory, program)
        except BaseException:
            group.remove()
            shutil.rmtree(directory, ignore_errors=True)
            raise
        sandbox = cls(process, group, directory, limits, max_line_bytes)
        try:
            ready = sandbox.receive(time.monotonic() + START_TIMEOUT_S)
        except (ChannelClosed, ChannelTimeout, ChannelBroken) as failure:
            ready = {"failure": str(failure) or type(failure).__name__}
        if ready != {"ready": True}:
            stderr = sandbox.stderr()
            sandbox.close()
            raise SandboxUnavailable(f"the sandbox did not start ({ready}): {stderr.strip()[:500]}")
        return sandbox

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: dict[str, Any], deadline: float) -> None:
        """Write one line; ChannelClosed, ChannelTimeout."""
        stdin = self.process.stdin
        assert stdin is not None
        view = memoryview((json.dumps(message, default=str) + "\n").encode())
        while view:
            _wait(stdin.fileno(), select.POLLOUT, deadline)
            try:
                view = view[os.write(stdin.fileno(), view):]
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError) as closed:
                raise ChannelClosed from closed

    def receive(self, deadline: float) -> dict[str, Any]:
        """The next message: a JSON object with one key the runner sends; ChannelClosed,
        ChannelTimeout, ChannelBroken."""
        stdout = self.process.stdout
        assert stdout is not None
        while (end := self._buffer.find(b"\n", self._scanned)) < 0:
            self._scanned = len(self._buffer)
            if self._scanned > self.max_line_bytes:
                raise ChannelBroken(f"a line of more than {self.max_line_bytes} bytes")
            _wait(stdout.fileno(), select.POLLIN, deadline)
            try:
                chunk = os.read(stdout.fileno(), 65536)
            except BlockingIOError:
                continue
            if not chunk:
                raise ChannelClosed
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        self._scanned = 0
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            raise ChannelBroken("a line that is not JSON") from None
        if not isinstance(message, dict) or len(message) != 1 or not MESSAGES.issuperset(message):
            raise ChannelBroken("a line that is not a message of the runner")
        return message

    def end(self, *, kill: bool) -> int | None:
        """Wait for the sandbox to exit (killing it first, or after EXIT_WAIT_S); its exit
        status as bwrap gives it (128 + N: the code was killed by signal N; negative: bwrap
        itself was). Notes the CPU time it used (`cpu_s`)."""
        if kill:
            self.kill()
        deadline = time.monotonic() + (KILL_WAIT_S if kill else EXIT_WAIT_S)
        exited = _exit_watch(self.process.pid)
        while self.process.returncode is None:
            try:
                pid, status, usage = os.wait4(self.process.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                self.process.returncode = os.waitstatus_to_exitcode(status)
                # Each of bwrap's processes waits for its child: the usage is the code's too.
                self.cpu_s = usage.ru_utime + usage.ru_stime
                break
            if time.monotonic() >= deadline:
                if kill:
                    logger.warning("sandbox %s: still alive after SIGKILL", self.process.pid)
                    break
                self.kill()
                kill, deadline = True, time.monotonic() + KILL_WAIT_S
            exited.poll(max(1, int((deadline - time.monotonic()) * 1000)))
        exited.close()
        return self.process.returncode

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.group.kill()

    def stderr(self) -> str:
        with contextlib.suppress(OSError), open(self.directory / "stderr", "rb") as file:
            return file.read(STDERR_LOGGED_BYTES).decode(errors="replace")
        return ""

    def close(self, *, remove_group: bool = True) -> None:
        """Kill what is left, delete the directory and (unless the caller does it later: it
        takes the kernel a few ms) the control groups. Idempotent."""
        if self.process.returncode is None:
            self.end(kill=True)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        shutil.rmtree(self.directory, ignore_errors=True)
        if remove_group:
            self.group.remove()


def _spawn(executable: str, limits: SpawnLimits, group: ProcessGroup, directory: Path,
           program: bytes) -> subprocess.Popen[bytes]:
    seccomp_fd = filled_pipe(program, what="the seccomp filter")
    try:
        args = bwrap_args(layout=python_layout(), host=host_view(python_layout()), scratch=directory / "home",
                          seccomp_fd=seccomp_fd)
        args_fd = filled_pipe(b"".join(arg.encode() + b"\0" for arg in args), what="bwrap's options")
        try:
            with open(directory / "stderr", "wb") as stderr:
                process = subprocess.Popen(
                    [BWRAP, "--args", str(args_fd), "--", executable, *PYTHON_FLAGS, "-c", runner_source()],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, bufsize=0,
                    pass_fds=(args_fd, seccomp_fd), env=BWRAP_ENV, preexec_fn=preexec(rlimits(limits), group),
                    start_new_session=True, cwd="/",
                )
        finally:
            os.close(args_fd)
    finally:
        os.close(seccomp_fd)
    assert process.stdin is not None and process.stdout is not None
    os.set_blocking(process.stdin.fileno(), False)
    os.set_blocking(process.stdout.fileno(), False)
    return process


class _ExitWatch:
    """Waits for a process to exit: on a pidfd (readable once it has), else in small sleeps."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def poll(self, timeout_ms: int) -> None:
        if self.fd is None:
            time.sleep(0.005)
            return
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        poller.poll(timeout_ms)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _exit_watch(pid: int) -> _ExitWatch:
    try:
        return _ExitWatch(os.pidfd_open(pid))
    except (AttributeError, OSError):
        return _ExitWatch(None)


def _wait(fd: int, event: int, deadline: float) -> None:
    """Until `fd` is ready for `event` (or has an error or hang-up); ChannelTimeout."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise ChannelTimeout
    poller = select.poll()
    poller.register(fd, event)
    if not poller.poll(max(1, int(remaining * 1000))) and time.monotonic() >= deadline:
        raise ChannelTimeout
