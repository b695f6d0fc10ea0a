"""What a stdio MCP server's process may see and use: bubblewrap's arguments and the limits.

Each process runs under bubblewrap (`bwrap`), the sandbox Flatpak and others build on: a
proven tool that confines with the kernel's namespaces (mount, PID, network, IPC, UTS, user,
cgroup), rather than a chroot and setrlimit calls of our own, which would miss what it
handles (a fresh /proc, dropped capabilities, no way back out through a mount).

What the process sees (`bwrap_args`, pure: the spec, its scratch directory and the host's
layout in, arguments out):

- no namespace of the host's: `--unshare-all` (its own PIDs, no network but its own loopback;
  `--share-net` only when the launcher's `network` is on), as user `nobody` (65534) of a user
  namespace of its own with every capability dropped and no way to make another (nested
  user namespaces are where many kernel exploits start), in a new session (no terminal to
  inject into), killed when the bridge dies (`--die-with-parent`);
- an empty environment (`--clearenv`) but for PATH, HOME, LANG, TMPDIR and the credential's
  variable: nothing of ToolHub's (SECRET_KEY, DATABASE_URL, ...);
- a root of its own, read-only: /usr (with /bin, /lib, ... as the host links them), the
  executable and, for a script, its interpreter: a Python venv (pyvenv.cfg) and the prefix
  of its base interpreter; of /etc only the linker's cache and the time zone (and, with the
  network, what name resolution and TLS read); a fresh /proc, a minimal /dev, an empty /tmp;
- its own scratch directory, read-write, as HOME and working directory (`SANDBOX_HOME`), and
  the launcher's read paths (read-only) and write paths (read-write) at their host paths.

Nothing else of the host: not ToolHub's checkout, not the bridge's files, not /root.

The options go to bwrap through a pipe (`--args FD`, stdio.py), never on its command line,
so the credential (a `--setenv`) is not in any process's `cmdline`; only the launcher's
command is.
"""

from __future__ import annotations

import re
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SANDBOX_HOME = "/home/mcp"
SANDBOX_UID = 65534
# The environment the process starts with, besides HOME and the credential's variable.
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "TMPDIR": "/tmp",
    # The interpreter's files are read-only: do not try to write bytecode next to them.
    "PYTHONDONTWRITEBYTECODE": "1",
}
RESERVED_ENV = frozenset({*BASE_ENV, "HOME"})
# The host's top-level links into /usr (Debian's merged /usr) or directories, as the host has them.
SYSTEM_ROOTS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What every process may read of /etc: the dynamic linker's cache and the time zone.
ETC_ALWAYS = ("/etc/ld.so.cache", "/etc/localtime")
# With the network: name resolution and the CA certificates TLS clients read.
ETC_NETWORK = (
    "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/ssl",
    "/etc/ca-certificates", "/etc/pki",
)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MIB = 1024 * 1024
# Bounds of the numbers a launch spec carries (the launcher model's, idle time from 1 s).
BOUNDS = {
    "memory_mb": (64, 65536),
    "cpu_s": (1, 86400),
    "max_processes": (1, 4096),
    "max_open_files": (16, 65536),
    "idle_stop_s": (1, 86400),
}


@dataclass(frozen=True)
class LaunchSpec:
    """A request's `Toolhub-Launch` header, checked (apps/upstreams/bridge.py launch_spec)."""

    launcher: str
    command: tuple[str, ...]
    read_paths: tuple[str, ...]
    write_paths: tuple[str, ...]
    env_name: str | None
    network: bool
    memory_mb: int
    cpu_s: int
    max_processes: int
    max_open_files: int
    idle_stop_s: int

    @classmethod
    def from_dict(cls, spec: dict[str, Any]) -> LaunchSpec:
        """The spec; ValueError saying what is wrong with it."""
        command = spec.get("command")
        if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
            raise ValueError("command must be a non-empty list of strings")
        if not _absolute(command[0]):
            raise ValueError("the executable (command[0]) must be an absolute path without '..'")
        if any("\0" in argument for argument in command):
            raise ValueError("an argument contains a NUL character")
        paths: dict[str, tuple[str, ...]] = {}
        for field in ("read_paths", "write_paths"):
            value = spec.get(field, [])
            if not isinstance(value, list) or not all(isinstance(p, str) and _absolute(p) for p in value):
                raise ValueError(f"{field} must be a list of absolute paths without '..'")
            paths[field] = tuple(value)
        env_name = spec.get("env_name")
        if env_name is not None and (not isinstance(env_name, str) or not ENV_NAME.match(env_name)):
            raise ValueError("env_name must be an environment variable's name or null")
        if env_name in RESERVED_ENV:
            raise ValueError(f"env_name may not be {env_name}: the bridge sets it")
        numbers: dict[str, int] = {}
        for field, (low, high) in BOUNDS.items():
            value = spec.get(field)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ValueError(f"{field} must be an integer from {low} to {high}")
            numbers[field] = value
        if not isinstance(spec.get("network"), bool):
            raise ValueError("network must be true or false")
        return cls(
            launcher=str(spec.get("launcher") or "unnamed"), command=tuple(command),
            read_paths=paths["read_paths"], write_paths=paths["write_paths"], env_name=env_name,
            network=spec["network"], memory_mb=numbers["memory_mb"], cpu_s=numbers["cpu_s"],
            max_processes=numbers["max_processes"], max_open_files=numbers["max_open_files"],
            idle_stop_s=numbers["idle_stop_s"],
        )


def _absolute(path: str) -> bool:
    return path.startswith("/") and "/../" not in f"{path}/" and "\0" not in path


@dataclass(frozen=True)
class HostView:
    """What of the host a process's root is built from: read by `host_view`."""

    # Top-level paths that are links on the host (e.g. /lib -> usr/lib), with their targets.
    links: tuple[tuple[str, str], ...]
    # Top-level system directories that are real directories on the host.
    directories: tuple[str, ...]
    # The executable, its interpreter and their prefixes outside /usr, to bind read-only.
    runtime: tuple[str, ...]
    # The files of /etc the process reads that exist on this host.
    etc: tuple[str, ...]


def bwrap_args(spec: LaunchSpec, *, scratch: Path, credential: str | None, host: HostView) -> list[str]:
    """Pure: bwrap's options confining `spec.command` (which follows them, after `--`, on
    bwrap's command line: bwrap reads only options from its `--args` pipe)."""
    args = confinement_args(network=spec.network, env={**BASE_ENV, "HOME": SANDBOX_HOME})
    if spec.env_name and credential is not None:
        args += ["--setenv", spec.env_name, credential]
    args += root_args(host)
    for path in spec.read_paths:
        args += ["--ro-bind", path, path]
    for path in spec.write_paths:
        args += ["--bind", path, path]
    return args + home_args(scratch, SANDBOX_HOME)


def confinement_args(*, network: bool, env: dict[str, str]) -> list[str]:
    """Pure: no namespace of the host's (but the network's, when `network`), user nobody
    without capabilities, a session of its own, killed with its parent, only `env`."""
    # --unshare-all only tries a user namespace; insisting on one lets nested ones be refused.
    args = ["--unshare-all", "--unshare-user"]
    if network:
        args.append("--share-net")
    args += [
        "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--disable-userns", "--cap-drop", "ALL",
        "--die-with-parent", "--new-session", "--clearenv",
    ]
    for name, value in sorted(env.items()):
        args += ["--setenv", name, value]
    return args


def root_args(host: HostView) -> list[str]:
    """Pure: a root of the host's system directories, read-only, a fresh /proc, a minimal
    /dev and an empty /tmp."""
    args = ["--ro-bind", "/usr", "/usr"]
    for path, target in host.links:
        args += ["--symlink", target, path]
    for path in (*host.directories, *host.etc, *host.runtime):
        args += ["--ro-bind", path, path]
    return args + ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def home_args(scratch: Path, home: str) -> list[str]:
    """Pure: `scratch`, read-write, as `home` and working directory; the root made read-only
    (the last options: nothing outside the mounts before them is writable)."""
    return ["--bind", str(scratch), home, "--chdir", home, "--remount-ro", "/"]


def rlimits(spec: LaunchSpec) -> list[tuple[int, int, int]]:
    """Pure: the (resource, soft, hard) limits set in the child before it runs bwrap."""
    return process_rlimits(memory_mb=spec.memory_mb, cpu_s=spec.cpu_s, cpu_grace_s=5,
                           max_open_files=spec.max_open_files, max_processes=spec.max_processes)


def process_rlimits(
    *, memory_mb: int, cpu_s: int, cpu_grace_s: int, max_open_files: int, max_processes: int,
) -> list[tuple[int, int, int]]:
    """Pure: address space, CPU time (SIGXCPU at `cpu_s`, SIGKILL `cpu_grace_s` later), open
    files, processes (for users other than the host's root) and no core dumps."""
    memory = memory_mb * MIB
    return [
        (resource.RLIMIT_AS, memory, memory),
        (resource.RLIMIT_CPU, cpu_s, cpu_s + cpu_grace_s),
        (resource.RLIMIT_NOFILE, max_open_files, max_open_files),
        (resource.RLIMIT_NPROC, max_processes, max_processes),
        (resource.RLIMIT_CORE, 0, 0),
    ]


def host_view(spec: LaunchSpec) -> HostView:
    """Reads the host: which system roots are links, what the executable needs, which /etc
    files exist."""
    links, directories = system_roots()
    etc = existing((*ETC_ALWAYS, *(ETC_NETWORK if spec.network else ())))
    return HostView(links, directories, tuple(runtime_roots(spec.command[0])), etc)


def system_roots() -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """Reads the host: its top-level system roots that are links (with their targets), and
    those that are directories."""
    links: list[tuple[str, str]] = []
    directories: list[str] = []
    for root in SYSTEM_ROOTS:
        path = Path(root)
        if path.is_symlink():
            links.append((root, str(path.readlink())))
        elif path.is_dir():
            directories.append(root)
    return tuple(links), tuple(directories)


def existing(paths: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(path for path in paths if Path(path).exists())


def runtime_roots(executable: str) -> list[str]:
    """The paths outside /usr that running `executable` reads: itself, the interpreter its
    shebang names, and for each of them that belongs to a Python venv, the venv and its base
    interpreter's prefix (pyvenv.cfg's `home` is that prefix's bin/)."""
    roots: list[str] = []
    candidates = [Path(executable)]
    if interpreter := _shebang_interpreter(Path(executable)):
        candidates.append(Path(interpreter))
    for candidate in candidates:
        for path in (candidate, candidate.resolve()):
            venv = path.parent.parent
            if (venv / "pyvenv.cfg").is_file():
                roots.append(str(venv))
                if home := _venv_home(venv / "pyvenv.cfg"):
                    roots.append(str(Path(home).parent))
            else:
                roots.append(str(path))
    kept: list[str] = []
    for root in dict.fromkeys(roots):
        if not Path(root).exists() or _under(root, "/usr"):
            continue
        kept.append(root)
    # A path inside another bound path needs no mount of its own.
    return [root for root in kept if not any(other != root and _under(root, other) for other in kept)]


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _shebang_interpreter(path: Path) -> str | None:
    try:
        with path.open("rb") as file:
            first = file.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    return words[0] if words and words[0].startswith("/") else None


def _venv_home(config: Path) -> str | None:
    try:
        lines = config.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip().startswith("/"):
            return value.strip()
    return None
