"""`make run` (scripts/run.sh) started by a test on a scratch var dir, and a second shell
beside it: what the README's walk-throughs do in two terminals."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.ops.conftest import ROOT, free_port, wait_until

# Settings of the test run that neither `make run` nor a user's second shell would have.
_TEST_RUN_PREFIXES = ("TOOLHUB_", "LOG_", "DJANGO_", "PROMETHEUS_")
_TEST_RUN_NAMES = frozenset({"DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL",
                             # `make test`'s own make, which a make started by a test must not join
                             "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKE_TERMOUT", "MAKE_TERMERR"})


def user_environment() -> dict[str, str]:
    """The developer's environment less the test run's settings: a fresh terminal."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(_TEST_RUN_PREFIXES) and name not in _TEST_RUN_NAMES
    }


def make_run_environment(var_dir: Path, port: int, mcp_port: int, bridge_port: int) -> dict[str, str]:
    """make run's environment on a scratch var dir: whatever the developer's .env says,
    nothing of theirs is used or overwritten."""
    return {
        **user_environment(),
        "TOOLHUB_PORT": str(port),
        "TOOLHUB_DEMO_MCP_PORT": str(mcp_port),
        "TOOLHUB_MCP_BRIDGE_PORT": str(bridge_port),
        "TOOLHUB_VAR_DIR": str(var_dir),
        "DATABASE_URL": f"sqlite:///{var_dir / 'toolhub.sqlite3'}",
        "CELERY_BROKER_URL": "filesystem://",
        "CACHE_URL": f"filecache://{var_dir / 'cache'}",
        "LOG_LEVEL": "INFO",
    }


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (run.sh starts each service in a session of its own)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def kill_leftovers(pids: set[int]) -> None:
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):  # exited meanwhile
                os.kill(pid, signal.SIGKILL)


@dataclass
class RunningDemo:
    """scripts/run.sh, up (its banner printed), with its output in files."""

    process: subprocess.Popen
    var_dir: Path
    port: int
    mcp_port: int
    bridge_port: int
    out: Path
    err: Path
    children: set[int] = field(default_factory=set)
    # When the banner was seen (time.monotonic()), and the statuses of the server's /readyz
    # and the demo MCP server's and the MCP bridge's /healthz asked for right then.
    up_since: float = 0.0
    answered_at_banner: dict[str, int] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def agent_key(self) -> str:
        printed = self.out.read_text().splitlines()
        return next(line.split("=", 1)[1] for line in printed if line.startswith("AGENT_KEY="))

    def second_shell(self) -> dict[str, str]:
        """A new terminal in the checkout. The var dir is a scratch one, moved as a user moves
        it, with TOOLHUB_VAR_DIR; nothing else of make run's is exported."""
        return {**user_environment(), "TOOLHUB_VAR_DIR": str(self.var_dir)}

    def manage(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """`.venv/bin/python manage.py ARGS` in a second shell."""
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.second_shell(), input=stdin,
            capture_output=True, text=True, timeout=120,
        )


def start_make_run(tmp_path: Path) -> RunningDemo:
    """scripts/run.sh started and waited for until its banner is printed."""
    port, mcp_port, bridge_port, var_dir = free_port(), free_port(), free_port(), tmp_path / "var"
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        process = subprocess.Popen(
            [str(ROOT / "scripts" / "run.sh")], cwd=ROOT,
            env=make_run_environment(var_dir, port, mcp_port, bridge_port),
            stdout=stdout, stderr=stderr, start_new_session=True,
        )
    demo = RunningDemo(process=process, var_dir=var_dir, port=port, mcp_port=mcp_port,
                       bridge_port=bridge_port, out=out, err=err)
    try:
        wait_until(
            lambda: "AGENT_KEY=thk_" in out.read_text() or process.poll() is not None,
            timeout_s=180, what="the banner",
        )
        demo.up_since = time.monotonic()
        assert process.poll() is None, err.read_text()[-3000:]
        demo.answered_at_banner = {
            "readyz": httpx.get(f"{demo.url}/readyz", timeout=5).status_code,
            "demo MCP healthz": httpx.get(f"http://127.0.0.1:{mcp_port}/healthz", timeout=5).status_code,
            "MCP bridge healthz": httpx.get(f"http://127.0.0.1:{bridge_port}/healthz", timeout=5).status_code,
        }
        demo.children = descendants(process.pid)
    except BaseException:
        kill_make_run(demo)
        raise
    return demo


def kill_make_run(demo: RunningDemo) -> None:
    """run.sh and every process below it killed at once: the end of a demo whose stop is not
    under test (tests/ops/test_make_run_stop.py stops make run as people do), without the
    seconds a clean stop takes."""
    everything = demo.children | descendants(demo.process.pid)  # before run.sh is gone
    if demo.process.poll() is None:
        demo.process.kill()
        demo.process.wait(timeout=10)
    kill_leftovers(everything)
