"""acme's upstream `shipping` as a stdio MCP server (tests/stdio_shipping_server.py) run by the
real MCP bridge, registered as an operator and a curator register one (`add_mcp_launcher`,
`add_upstream --command`), and what the tests steer it with. Its name and tenant are those of
the HTTP shipping server's tests, so their helpers (tests/imports/conftest.py) serve both."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import TestCase

from apps.bridge.processes import BACKOFF_MAX_S
from apps.upstreams.models import Upstream
from apps.upstreams.services import upstream_save
from tests.bridge_server import BridgeServer
from tests.e2e.conftest import wait_for
from tests.imports.conftest import run_command
from tests.stdio_shipping_server import BOOKINGS, BROKEN

SERVER = Path(__file__).resolve().parent.parent / "stdio_shipping_server.py"
BACKOFF = re.compile(r"started again on a request after (\d+) s")


@pytest.fixture
def shipping(mcp_bridge: BridgeServer, agent: Any, tmp_path: Path) -> Path:
    """acme's upstream `shipping`: the stdio server, run by the platform's launcher, which may
    read only the script and write only the server's state directory. Returns that directory."""
    state = tmp_path / "shipping"
    state.mkdir()
    run_command(
        "add_mcp_launcher", "stdio-shipping", "--command", f"{sys.executable} {SERVER} --state {state}",
        "--read", str(SERVER), "--write", str(state),
    )
    run_command(
        "add_upstream", "shipping", "--tenant", "acme", "--kind", "mcp", "--command", "stdio-shipping"
    )
    return state


def bookings(state: Path) -> dict[str, Any]:
    """The idempotency keys that reached the server (`arrived`, in order) and what each booked."""
    path = state / BOOKINGS
    return json.loads(path.read_text()) if path.exists() else {"arrived": [], "booked": {}}


def status_tool(name: str) -> None:
    """The upstream `shipping` names its status tool, saved and committed as an operator's edit
    is (every process's memo of upstreams drops what it held)."""
    upstream = Upstream.objects.get(name="shipping")
    upstream.status_tool = name
    with TestCase.captureOnCommitCallbacks(execute=True):
        upstream_save(upstream=upstream, actor="test")


def _stops(bridge: BridgeServer) -> list[str]:
    """The bridge's lines saying a stdio-shipping process stopped by itself (each names the
    back-off before it is started again)."""
    return [line for line in bridge.log_text().splitlines()
            if "stdio-shipping" in line and "stopped by itself" in line]


def break_server(state: Path, bridge: BridgeServer) -> None:
    """The server exits and cannot start again (until `mend_server`); returns once the bridge
    knows, so the next request finds no process."""
    before = len(_stops(bridge))
    (state / BROKEN).touch()
    wait_for(lambda: len(_stops(bridge)) > before, what="the bridge to see the server stop")


def break_server_once_booked(state: Path, bridge: BridgeServer) -> threading.Thread:
    """break_server as soon as a booking is recorded (the server then dies mid-call)."""

    def watch() -> None:
        wait_for(lambda: bookings(state)["arrived"], what="a booking")
        break_server(state, bridge)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def mend_server(state: Path, bridge: BridgeServer) -> None:
    """The server can start again; returns once the bridge's back-off after its last stop is
    over, so that the next request starts it."""
    (state / BROKEN).unlink()
    backoff = BACKOFF.search(_stops(bridge)[-1])
    time.sleep((float(backoff[1]) if backoff else BACKOFF_MAX_S) + 0.2)
