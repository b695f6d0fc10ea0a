"""The limits of a process, as the kernel enforces them: resource limits set in the child
before it runs bwrap, and a control group of its own where one can be made.

RLIMIT_NPROC counts processes per user, and the kernel never applies it to the host's root
user, which every process of the bridge is outside its user namespace: a fork bomb is
stopped only by a `pids` control group. So each process gets a fresh group with `pids.max`
(its launcher's max_processes) and, with a `memory` controller, a memory limit (memory_mb:
RLIMIT_AS bounds each process's address space, the group all of them together), when the
bridge can write a cgroup hierarchy: cgroup v1's `pids` and `memory` hierarchies, or v2's
unified one when its controllers are delegated to the bridge's group. `Cgroups.detect`
finds which, once at start, and `describe` says what is enforced, for the start's log line.

The child joins its groups itself, between fork and exec (`preexec`), so nothing it starts
escapes them; `ProcessGroup.kill` ends every process in them, `remove` deletes them.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PARENT_PREFIX = "toolhub-bridge-"


@dataclass(frozen=True)
class ProcessGroup:
    """One process's control groups (one per hierarchy; empty when none can be made)."""

    directories: tuple[Path, ...] = ()

    def join_paths(self) -> tuple[str, ...]:
        return tuple(str(directory / "cgroup.procs") for directory in self.directories)

    def pids(self) -> set[int]:
        found: set[int] = set()
        for directory in self.directories:
            with contextlib.suppress(OSError, ValueError):
                found |= {int(line) for line in (directory / "cgroup.procs").read_text().split()}
        return found

    def kill(self) -> None:
        """SIGKILL every process in the groups (bwrap's PID namespace ends them too)."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def memory_exhausted(self) -> bool:
        """Whether the memory controller killed a process of the group for want of memory."""
        for directory in self.directories:
            for file in ("memory.oom_control", "memory.events"):
                for line in _read(directory / file).splitlines():
                    name, _, count = line.partition(" ")
                    if name == "oom_kill" and count.strip() not in ("", "0"):
                        return True
        return False

    def remove(self) -> None:
        """Delete the groups once their processes are gone (a killed process takes a moment)."""
        for directory in self.directories:
            for _ in range(50):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self.kill()
                    time.sleep(0.02)


@dataclass
class Cgroups:
    """The hierarchies the bridge makes process groups in: each a parent directory of the
    bridge's own (`toolhub-bridge-<pid>`) and the limit files it writes there."""

    pids_parent: Path | None = None
    memory_parent: Path | None = None
    memory_file: str = "memory.limit_in_bytes"
    version: str = ""
    _made: list[Path] = field(default_factory=list)

    @classmethod
    def detect(cls, *, prefix: str = PARENT_PREFIX) -> Cgroups:
        """The writable hierarchies of this machine (none: an empty Cgroups), in parent groups
        named `prefix` and this process's id (those of processes gone are deleted)."""
        found = cls()
        own = _own_groups()
        name = f"{prefix}{os.getpid()}"
        unified = CGROUP_ROOT / "cgroup.controllers"
        if unified.exists():
            parent = _make(CGROUP_ROOT / own.get("", "/").lstrip("/") / name, prefix)
            if parent is not None:
                found._made.append(parent)
                controllers = set((parent / "cgroup.controllers").read_text().split())
                with contextlib.suppress(OSError):
                    (parent / "cgroup.subtree_control").write_text(
                        " ".join(f"+{c}" for c in ("pids", "memory") if c in controllers)
                    )
                enabled = set(_read(parent / "cgroup.subtree_control").split())
                found.version = "v2"
                found.pids_parent = parent if "pids" in enabled else None
                found.memory_parent = parent if "memory" in enabled else None
                found.memory_file = "memory.max"
        else:
            for controller in ("pids", "memory"):
                hierarchy = CGROUP_ROOT / controller
                if not (hierarchy / "cgroup.procs").exists():
                    continue
                parent = _make(hierarchy / own.get(controller, "/").lstrip("/") / name, prefix)
                if parent is None:
                    continue
                found._made.append(parent)
                found.version = "v1"
                setattr(found, f"{controller}_parent", parent)
        return found

    def describe(self) -> str:
        enforced = [
            f"processes (cgroup {self.version} pids.max)" if self.pids_parent else "",
            f"total memory (cgroup {self.version} {self.memory_file})" if self.memory_parent else "",
        ]
        missing = [
            "" if self.pids_parent else "no pids cgroup: the number of processes is NOT bounded",
            "" if self.memory_parent else "no memory cgroup: memory is bounded per process only",
        ]
        return "; ".join(
            ["address space, CPU time, open files, core dumps (rlimits)", *filter(None, enforced),
             *filter(None, missing)]
        )

    def group(self, name: str, *, max_processes: int, memory_bytes: int) -> ProcessGroup:
        """A fresh group for one process (directories of the hierarchies that work)."""
        directories: list[Path] = []
        for parent, file, value in (
            (self.pids_parent, "pids.max", max_processes),
            (self.memory_parent, self.memory_file, memory_bytes),
        ):
            if parent is None:
                continue
            directory = parent / name if self.version == "v1" or not directories else directories[0]
            if directory not in directories:
                made = _make(directory)
                if made is None:
                    continue
                directories.append(made)
            with contextlib.suppress(OSError):
                (directory / file).write_text(str(value))
        return ProcessGroup(tuple(directories))

    def close(self) -> None:
        """Delete the bridge's parent groups (their process groups are gone by then)."""
        for parent in reversed(self._made):
            for child in parent.iterdir():
                if child.is_dir():
                    ProcessGroup((child,)).remove()
            with contextlib.suppress(OSError):
                parent.rmdir()


def _own_groups() -> dict[str, str]:
    """This process's group in each hierarchy, by controller ("" for v2's unified one)."""
    groups: dict[str, str] = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            groups[controller] = path
    return groups


def _make(directory: Path, prefix: str | None = None) -> Path | None:
    try:
        directory.mkdir(exist_ok=True)
    except OSError:
        return None
    if prefix is not None:
        _remove_stale(directory.parent, prefix)
    return directory


def _remove_stale(parent: Path, prefix: str) -> None:
    """Delete the groups a process that was killed left behind (its processes died with it)."""
    for stale in parent.glob(f"{prefix}*"):
        pid = stale.name.removeprefix(prefix)
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            Cgroups(_made=[stale]).close()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def preexec(limits: list[tuple[int, int, int]], group: ProcessGroup) -> Callable[[], None]:
    """What the child runs between fork and exec: join its groups, then set its limits.
    Only system calls: the bridge has threads, so the child must take no lock."""
    procs = group.join_paths()

    def run() -> None:
        pid = str(os.getpid()).encode()
        for path in procs:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        for kind, soft, hard in limits:
            ceiling = resource.getrlimit(kind)[1]
            if ceiling != resource.RLIM_INFINITY:
                soft, hard = min(soft, ceiling), min(hard, ceiling)
            resource.setrlimit(kind, (soft, hard))

    return run
