"""The MCP bridge as a deployment runs it: `manage.py mcp_bridge` in a subprocess on a free
loopback port, its log in a file the tests can read. tests/conftest.py makes it the fixtures
`mcp_bridge_server` (one per test session) and `mcp_bridge` (that one, with
settings.TOOLHUB_MCP_BRIDGE_URL pointing at it for the test)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.mcp_upstream import free_port

ROOT = Path(__file__).resolve().parent.parent
BRIDGE_DATABASE_URL = "postgres://toolhub:db-password-the-sandbox-must-not-see@127.0.0.1:5432/toolhub"


@dataclass(frozen=True)
class BridgeServer:
    port: int
    log: Path
    scratch: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None and httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200


@contextmanager
def bridge_server(workdir: Path, *, env: dict[str, str] | None = None) -> Iterator[BridgeServer]:
    """The bridge until the block ends (SIGTERM, then SIGKILL after 20 s). Its settings are the
    tests' (the same SECRET_KEY, so the same bridge token); `env` overrides any variable."""
    port = free_port()
    log = workdir / "bridge.log"
    scratch = workdir / "scratch"
    environment = {
        # A database URL in its environment, as a deployment's bridge may well have: what a
        # server must never see (the bridge itself opens no connection).
        "DATABASE_URL": BRIDGE_DATABASE_URL,
        **os.environ, "DJANGO_SETTINGS_MODULE": "toolhub.settings.test", "LOG_FORMAT": "plain",
        "LOG_COLOR": "0", "TOOLHUB_MCP_SCRATCH_DIR": str(scratch), **(env or {}),
    }
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "mcp_bridge", "--port", str(port)],
            cwd=ROOT, env=environment, start_new_session=True, stdout=output, stderr=subprocess.STDOUT,
        )
    server = BridgeServer(port=port, log=log, scratch=scratch, process=process)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the bridge exited: {server.log_text()[-3000:]}")
            try:
                if httpx.get(f"{server.url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.1)
        yield server
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes], *, timeout_s: float = 20) -> int:
    """SIGTERM the bridge (as a service manager would), SIGKILL its group if it hangs."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return process.wait()
