"""Warm sandboxes: starting bwrap and the interpreter costs about a tenth of a second, so each
process keeps TOOLHUB_SANDBOX_WARM of them started, their runner waiting for its code.

Each sandbox serves one run and is then thrown away (a run leaves state: files, threads,
whatever the code changed in the interpreter); a thread of the pool starts the next one.
That thread is also the one that starts every warm sandbox, and it lives as long as the
pool: bwrap's `--die-with-parent` is bound to the thread that started it, and a sandbox
must not die because a short-lived thread ended. A run that finds none warm starts a cold
one in its own thread (alive for the whole run).

Sandboxes are kept per set of limits they were started with (a warm sandbox's CPU, memory
and process limits are set before its run is known), for the MAX_KINDS sets used last.

One pool per process, made on first use: under Celery's prefork each worker process makes
its own, and a forked child forgets (without stopping) the sandboxes of its parent's pool.
`stop_pool` (also at exit) stops the thread and every sandbox, and deletes the control
groups; directories and groups of a process killed before it could are deleted by the next
pool made on the machine.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import threading
from collections import OrderedDict, deque
from pathlib import Path
from queue import SimpleQueue

from django.conf import settings

from apps.bridge.limits import Cgroups, ProcessGroup

from .isolation import SandboxUnavailable, SpawnLimits
from .process import Sandbox

logger = logging.getLogger("toolhub.sandbox")

CGROUP_PREFIX = "toolhub-sandbox-"
MAX_KINDS = 4
# After a warm sandbox failed to start: wait before trying again, not a busy loop.
RETRY_S = 5.0
# The line bound of a warm sandbox until a run sets its own.
DEFAULT_LINE_BYTES = 1 << 20


class SandboxPool:
    def __init__(self, *, warm: int, scratch_root: Path, cgroups: Cgroups) -> None:
        self.pid = os.getpid()
        self.warm = warm
        self.scratch_root = scratch_root
        self.cgroups = cgroups
        self.served_warm = 0
        self.started_cold = 0
        self._ready: OrderedDict[SpawnLimits, deque[Sandbox]] = OrderedDict()
        self._changed = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None
        # Control groups of finished sandboxes, deleted off the run's path.
        self._spent: SimpleQueue[ProcessGroup | None] = SimpleQueue()
        self._remover: threading.Thread | None = None

    def take(self, limits: SpawnLimits, *, max_line_bytes: int) -> Sandbox:
        """A sandbox for one run: a warm one, else one started now. SandboxUnavailable."""
        evicted: list[Sandbox] = []
        sandbox = None
        with self._changed:
            if self._stopped:
                raise SandboxUnavailable("the sandbox pool is stopped (the process is exiting)")
            queue = self._ready.setdefault(limits, deque())
            self._ready.move_to_end(limits)
            while len(self._ready) > MAX_KINDS:
                evicted += self._ready.popitem(last=False)[1]
            if queue:
                sandbox = queue.popleft()
            if self.warm > 0:
                self._start_thread()
                self._changed.notify_all()
        for old in evicted:
            old.close()
        if sandbox is not None and sandbox.alive():
            self.served_warm += 1
            sandbox.max_line_bytes = max_line_bytes
            return sandbox
        if sandbox is not None:
            sandbox.close()
        self.started_cold += 1
        return Sandbox.start(limits=limits, scratch_root=self.scratch_root, cgroups=self.cgroups,
                             max_line_bytes=max_line_bytes)

    def prewarm(self, limits: SpawnLimits) -> None:
        """Start filling the pool for `limits` now, before a run asks: a worker process's first
        run starts warm too."""
        with self._changed:
            if self._stopped or self.warm <= 0:
                return
            self._ready.setdefault(limits, deque())
            self._start_thread()
            self._changed.notify_all()

    def release(self, sandbox: Sandbox) -> None:
        """A sandbox's run is over: it is stopped and its directory deleted now, its control
        groups soon after (deleting them takes the kernel a few ms)."""
        sandbox.close(remove_group=False)
        with self._changed:
            if not self._stopped and sandbox.group.directories:
                if self._remover is None:
                    self._remover = threading.Thread(target=self._remove_spent, daemon=True,
                                                     name="toolhub-sandbox-groups")
                    self._remover.start()
                self._spent.put(sandbox.group)
                return
        sandbox.group.remove()

    def warm_count(self, limits: SpawnLimits) -> int:
        with self._changed:
            return len(self._ready.get(limits, ()))

    def wait_filled(self, limits: SpawnLimits, *, timeout_s: float) -> bool:
        """Whether `warm` sandboxes of `limits` are ready within `timeout_s` (tests, bench)."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._ready.get(limits, ())) >= self.warm, timeout_s)

    def stop(self) -> None:
        """Stop the thread and every warm sandbox; delete the control groups."""
        with self._changed:
            self._stopped = True
            sandboxes = [sandbox for queue in self._ready.values() for sandbox in queue]
            self._ready.clear()
            self._changed.notify_all()
        self._spent.put(None)
        for thread in (self._thread, self._remover):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=30)
        for sandbox in sandboxes:
            sandbox.close()
        self.cgroups.close()

    def forget(self) -> None:
        """In a forked child: let go of the parent's sandboxes without stopping them."""
        for queue in self._ready.values():
            for sandbox in queue:
                for stream in (sandbox.process.stdin, sandbox.process.stdout):
                    if stream is not None:
                        with contextlib.suppress(OSError):
                            stream.close()
                # Known reaped: Popen must not wait for another process's child.
                sandbox.process.returncode = 0
        self._ready.clear()
        self._stopped = True

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._fill, name="toolhub-sandbox-pool", daemon=True)
            self._thread.start()

    def _missing(self) -> SpawnLimits | None:
        # The most recently used limits first.
        for limits in reversed(self._ready):
            if len(self._ready[limits]) < self.warm:
                return limits
        return None

    def _remove_spent(self) -> None:
        while (group := self._spent.get()) is not None:
            group.remove()

    def _fill(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._stopped or self._missing() is not None)
                if self._stopped:
                    return
                limits = self._missing()
            assert limits is not None
            try:
                sandbox = Sandbox.start(limits=limits, scratch_root=self.scratch_root, cgroups=self.cgroups,
                                        max_line_bytes=DEFAULT_LINE_BYTES)
            except (SandboxUnavailable, OSError) as failure:
                logger.warning("a warm sandbox could not be started: %s", failure)
                with self._changed:
                    self._changed.wait_for(lambda: self._stopped, RETRY_S)
                continue
            with self._changed:
                queue = None if self._stopped else self._ready.get(limits)
                if queue is not None:
                    queue.append(sandbox)
                    self._changed.notify_all()
            if queue is None:
                sandbox.close()


_pool: SandboxPool | None = None
_pool_lock = threading.Lock()


def warm_pool() -> SandboxPool:
    """This process's pool, made on first use (settings TOOLHUB_SANDBOX_WARM and
    TOOLHUB_SANDBOX_SCRATCH_DIR)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():
            root = Path(settings.TOOLHUB_SANDBOX_SCRATCH_DIR)
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            _remove_stale(root)
            cgroups = Cgroups.detect(prefix=CGROUP_PREFIX)
            logger.info("code sandboxes: %s", cgroups.describe())
            _pool = SandboxPool(warm=max(0, int(settings.TOOLHUB_SANDBOX_WARM)), scratch_root=root,
                                cgroups=cgroups)
        return _pool


def sandbox_for(limits: SpawnLimits, *, max_line_bytes: int) -> Sandbox:
    return warm_pool().take(limits, max_line_bytes=max_line_bytes)


def release(sandbox: Sandbox) -> None:
    warm_pool().release(sandbox)


def stop_pool() -> None:
    """Stop this process's pool, if it made one; the next run makes a new one."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None and pool.pid == os.getpid():
        pool.stop()


def _remove_stale(root: Path) -> None:
    """Directories of sandboxes whose process is gone (named `<pid>-...`)."""
    for directory in root.iterdir():
        pid = directory.name.partition("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(directory, ignore_errors=True)


def _after_fork_in_child() -> None:
    global _pool, _pool_lock
    # The parent's lock may have been held by another of its threads at the fork.
    _pool_lock = threading.Lock()
    if _pool is not None:
        _pool.forget()
        _pool = None


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(stop_pool)
