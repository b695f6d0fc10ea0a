"""What confines a model's code, and why these mechanisms.

The code is hostile by assumption: it was written by a model that may have read a prompt
injection. A sandbox made inside Python (restricted builtins, audit hooks, AST filters) has
been escaped every time it was tried: Python's object graph reaches everything from any
object. So the boundary is the kernel's, set up by tools that are used and attacked in
production every day, and each layer holds if another fails:

- bubblewrap (`bwrap`), as for the stdio MCP servers (apps/bridge/sandbox.py, whose pieces
  this reuses): namespaces of its own for mount, PID, network (only a loopback of its own),
  IPC, UTS, cgroup and user; user `nobody` with every capability dropped and no nested user
  namespace; a new session; killed with its parent; an empty environment. Its root is
  read-only and holds /usr, the base interpreter's prefix, the dynamic linker's cache, a
  fresh /proc, a minimal /dev, an empty /tmp and a fresh scratch directory as HOME: nothing of
  ToolHub's checkout, settings, .env or var/, nothing of the worker's environment.
- seccomp (`seccomp_filter`, built with libseccomp, the library Docker, systemd and
  Flatpak build theirs with, and passed to bwrap's `--seccomp`): no new process (fork,
  vfork, clone without CLONE_THREAD; clone3 answers ENOSYS so glibc falls back to clone,
  whose flags a filter can read), no socket but AF_UNIX, and none of the system calls
  kernel exploits start from (ptrace, mount, unshare, setns, bpf, perf_event_open, keys,
  userfaultfd, io_uring, modules, kexec, ...).
- resource limits (address space, CPU time, open files, file size, no core dumps) and,
  where the machine allows, a `pids` and `memory` control group (apps/bridge/limits.py):
  RLIMIT_NPROC does not apply to the host's root, which the sandbox's user is outside its
  namespace, so threads are bounded by the group.
- the interpreter: the base CPython of the running one (a venv's site-packages hold Django
  and ToolHub's dependencies), run isolated (`-I -S -B`), its stdlib read-only, every
  site-packages and dist-packages directory and every other interpreter's library hidden
  under an empty read-only tmpfs, `_ctypes` replaced by /dev/null (no foreign function
  interface to make system calls with), and the host's directories of executables hidden
  (nothing to exec into but the interpreter itself).
"""

from __future__ import annotations

import errno
import functools
import glob
import importlib.util
import os
import resource
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from apps.bridge.sandbox import (
    ETC_ALWAYS,
    HostView,
    confinement_args,
    existing,
    home_args,
    process_rlimits,
    root_args,
    system_roots,
)

HOME = "/home/code"
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": "/tmp", "HOME": HOME}
# The interpreter's flags: no environment variables, no site, no user site, no script
# directory on the path, no bytecode written.
PYTHON_FLAGS = ("-I", "-S", "-B")
# Other interpreters' libraries and the host's packages, hidden (their extension modules
# could bring a foreign function interface back).
PYTHON_LIBRARIES = ("/usr/lib/python3*", "/usr/lib64/python3*", "/usr/local/lib/python3*")
PACKAGE_DIRECTORIES = ("site-packages", "dist-packages")
# Where the host keeps executables: hidden, so the code cannot exec into another program.
EXECUTABLE_DIRECTORIES = ("/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/bin", "/sbin")
# Extension modules replaced by /dev/null: `import ctypes` raises ImportError.
FORBIDDEN_MODULES = ("_ctypes", "_ctypes_test")
# The sandbox's processes besides the interpreter: bwrap outside the PID namespace and its
# init inside, counted by the pids group too.
BWRAP_PROCESSES = 2
# The largest file the code may write (its scratch directory is on the host's disk).
MAX_FILE_MB = 64
CLONE_THREAD = 0x00010000
DENIED_SYSCALLS = (
    "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2",
    "pivot_root", "chroot", "unshare", "setns", "bpf", "perf_event_open", "keyctl", "add_key",
    "request_key", "userfaultfd", "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "reboot", "swapon", "swapoff", "open_by_handle_at", "fsopen", "fsconfig",
    "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "acct", "syslog", "quotactl", "iopl", "ioperm",
)


class SandboxUnavailable(Exception):
    """This machine cannot run code in a sandbox (bwrap or libseccomp missing, bwrap refused
    to start): a ToolHub-side failure, not the code's."""


@dataclass(frozen=True)
class PythonLayout:
    """Where the base interpreter is, and what of the host's Python must be hidden."""

    executable: str
    # Prefixes outside /usr to bind read-only (the interpreter, its stdlib, libpython).
    prefixes: tuple[str, ...]
    hidden_directories: tuple[str, ...]
    hidden_files: tuple[str, ...]


@dataclass(frozen=True)
class SpawnLimits:
    """What a sandbox is started with (a warm one is started before its run is known)."""

    cpu_s: int
    memory_mb: int
    max_processes: int
    max_open_files: int


@functools.cache
def python_layout() -> PythonLayout:
    """Reads the host: the running Python's base interpreter and what to hide around it."""
    executable = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    prefixes = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_exec_prefix)}
    hidden: list[str] = []
    for pattern in (*PYTHON_LIBRARIES, *(f"{prefix}/lib/python3*" for prefix in prefixes)):
        for library in sorted(glob.glob(pattern)):
            real = os.path.realpath(library)
            if not os.path.isdir(real):
                continue
            if real == stdlib:
                hidden += [f"{real}/{name}" for name in PACKAGE_DIRECTORIES
                           if os.path.isdir(f"{real}/{name}")]
            elif not _under(stdlib, real):
                hidden.append(real)
    # Real directories only: a link (merged /usr's /bin) leads into one of them.
    hidden += [d for d in EXECUTABLE_DIRECTORIES if os.path.isdir(d) and not os.path.islink(d)]
    forbidden = []
    for name in FORBIDDEN_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin and os.path.isfile(spec.origin):
            forbidden.append(os.path.realpath(spec.origin))
    outside_usr = tuple(sorted(p for p in prefixes if not _under(p, "/usr")))
    return PythonLayout(executable, outside_usr, tuple(dict.fromkeys(hidden)), tuple(forbidden))


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def host_view(layout: PythonLayout) -> HostView:
    links, directories = system_roots()
    return HostView(links, directories, layout.prefixes, existing(ETC_ALWAYS))


def bwrap_args(*, layout: PythonLayout, host: HostView, scratch: Path, seccomp_fd: int) -> list[str]:
    """Pure: bwrap's options confining the interpreter (which follows them after `--`)."""
    args = confinement_args(network=False, env=ENV) + root_args(host)
    for directory in layout.hidden_directories:
        args += ["--tmpfs", directory]
        if _under(layout.executable, directory):
            # The interpreter itself, when the host keeps it there (/usr/bin/python3.x).
            args += ["--ro-bind", layout.executable, layout.executable]
        args += ["--remount-ro", directory]
    for path in layout.hidden_files:
        args += ["--ro-bind", "/dev/null", path]
    return args + ["--seccomp", str(seccomp_fd)] + home_args(scratch, HOME)


def rlimits(limits: SpawnLimits) -> list[tuple[int, int, int]]:
    """Pure: the sandbox's resource limits (SIGXCPU at cpu_s, SIGKILL a second later)."""
    return [
        *process_rlimits(memory_mb=limits.memory_mb, cpu_s=limits.cpu_s, cpu_grace_s=1,
                         max_open_files=limits.max_open_files,
                         max_processes=limits.max_processes + BWRAP_PROCESSES),
        (resource.RLIMIT_FSIZE, MAX_FILE_MB * 1024 * 1024, MAX_FILE_MB * 1024 * 1024),
    ]


@functools.cache
def seccomp_program() -> bytes:
    """The seccomp filter as the BPF program bwrap loads (built once per process). Every
    system call named must be known to libseccomp: a filter missing one fails closed."""
    try:
        import pyseccomp as seccomp  # type: ignore[import-untyped]
    except (ImportError, OSError) as missing:
        raise SandboxUnavailable(f"libseccomp cannot be loaded ({missing}): install libseccomp2") from missing
    arch = seccomp.Arch.NATIVE
    denied = ("clone3", "socket", "clone", *DENIED_SYSCALLS)
    unknown = [name for name in denied if seccomp.resolve_syscall(arch, name) == -1]
    if unknown:
        raise SandboxUnavailable(f"this libseccomp does not know {', '.join(unknown)}: upgrade libseccomp2")
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
    # A thread is a clone with CLONE_THREAD; anything else would be a new process.
    rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
    # clone3's flags sit in memory a filter cannot read: ENOSYS makes glibc use clone.
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    rules.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
    read_end, write_end = os.pipe()
    try:
        with os.fdopen(write_end, "wb") as sink:
            rules.export_bpf(sink)
        chunks = []
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)
    finally:
        os.close(read_end)
    return b"".join(chunks)
