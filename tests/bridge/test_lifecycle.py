"""Stopping the bridge stops every process it started: SIGTERM (a service manager's stop)
ends them cleanly, and even SIGKILL leaves no orphan (bwrap's --die-with-parent)."""

from __future__ import annotations

import os
import re
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.bridge_server import BridgeServer, bridge_server

from .conftest import eventually, headers_for, hostile_launcher, structured, url_for


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its parent's reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _sandboxes(bridge: BridgeServer) -> set[int]:
    """The host PIDs of every process in the bridge's sandboxes (bwrap's, and theirs)."""
    pids = {int(pid) for pid in re.findall(r": started, pid (\d+)", bridge.log_text())}
    for procs in Path("/sys/fs/cgroup/pids").glob(f"toolhub-bridge-{bridge.process.pid}/*/cgroup.procs"):
        pids |= {int(pid) for pid in procs.read_text().split()}
    return pids


def _started(bridge: BridgeServer, settings) -> set[int]:
    settings.TOOLHUB_MCP_BRIDGE_URL = bridge.url
    headers = headers_for(hostile_launcher())
    urls = [url_for(upstream_id=400, tenant_id=tenant) for tenant in (1, 2)]
    with ThreadPoolExecutor() as pool:
        assert all(pool.map(lambda url: structured(url, headers, "whoami"), urls))
    pids = _sandboxes(bridge)
    assert len(pids) >= 2 and all(_alive(pid) for pid in pids)
    return pids


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_sigint_stops_the_bridge_and_every_process(tmp_path, settings, how):
    with bridge_server(tmp_path) as bridge:
        pids = _started(bridge, settings)

        bridge.process.send_signal(how)
        # uvicorn stops gracefully, then ends by the signal it got (as its service manager expects)
        assert bridge.process.wait(timeout=20) in (0, -how)

    assert [pid for pid in pids if _alive(pid)] == []
    assert "MCP bridge stopping: stopping 2 processes" in bridge.log_text()
    assert list(bridge.scratch.iterdir()) == []


def test_sigkill_of_the_bridge_leaves_no_orphan(tmp_path, settings):
    with bridge_server(tmp_path) as bridge:
        pids = _started(bridge, settings)

        os.kill(bridge.process.pid, signal.SIGKILL)
        bridge.process.wait()

        def gone() -> None:
            assert [pid for pid in pids if _alive(pid)] == []

        eventually(gone, timeout_s=5)
