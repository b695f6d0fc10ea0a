"""A hostile stdio server (hostile_server.py) under the bridge: everything it tries fails,
the bridge stays up, another process still serves, and the client gets a clean answer or
error each time."""

from __future__ import annotations

import json
import os
import socket
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from apps.upstreams.bridge import PROCESS_STOPPED
from tests.bridge_server import BRIDGE_DATABASE_URL

from .conftest import call, eventually, headers_for, hostile_launcher, structured, url_for

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "hostile-credential-" + uuid.uuid4().hex
LIMITS = {"memory_mb": 256, "max_processes": 16, "max_open_files": 64, "cpu_s": 60}


@pytest.fixture
def hostile(mcp_bridge) -> tuple[str, dict[str, str]]:
    """The hostile server's address and headers, with a credential; one process for the module."""
    headers = headers_for(hostile_launcher(**LIMITS), env_name="HOSTILE_TOKEN", credential=TOKEN)
    return url_for(upstream_id=100, tenant_id=7), headers


def _still_serving(mcp_bridge, hostile) -> None:
    """The bridge answers its health check and another process still answers."""
    assert mcp_bridge.alive()
    assert structured(*hostile, "whoami")["uid"] == 65534


def _destructible(upstream_id: int) -> tuple[str, dict[str, str]]:
    """A process of its own, for a test that gets it killed."""
    return url_for(upstream_id=upstream_id, tenant_id=7), headers_for(hostile_launcher(**LIMITS))


def _stopped(result: object) -> None:
    assert isinstance(result, MCPError), result
    assert result.error.code == INTERNAL_ERROR
    assert result.error.data == {"reason": PROCESS_STOPPED}


def test_it_cannot_read_toolhubs_environment_or_settings(mcp_bridge, hostile):
    settings_file = ROOT / "toolhub" / "settings" / "base.py"
    assert settings_file.exists()

    seen = structured(*hostile, "read_secrets", {"settings_path": str(settings_file)})

    assert set(seen["environ"]) == {
        "PATH", "HOME", "PWD", "LANG", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "HOSTILE_TOKEN",
    }
    assert seen["environ"]["HOSTILE_TOKEN"] == TOKEN
    assert seen["settings"].startswith("error")
    everything = json.dumps(seen)
    database_url = os.environ.get("DATABASE_URL", BRIDGE_DATABASE_URL)
    for secret in (settings.SECRET_KEY, database_url, "SECRET_KEY", "DATABASE_URL"):
        assert secret not in everything
    # Its own PID namespace: only the sandbox's processes (bwrap's init and itself).
    assert len(seen["proc_pids"]) <= 3


def test_it_cannot_connect_to_postgres_or_redis(mcp_bridge, hostile):
    for port in (5432, 6379):
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # the test's own process reaches them: the refusal below is the sandbox's

        answer = call(*hostile, "connect", {"port": port})

        assert not answer.is_error
        assert answer.structured_content["result"].startswith("error")


def test_it_cannot_write_outside_its_scratch_directory(mcp_bridge, hostile):
    mark = uuid.uuid4().hex
    targets = {
        "checkout": ROOT / f"pwned-{mark}",
        "settings": ROOT / "toolhub" / "settings" / f"pwned-{mark}.py",
        "host tmp": Path("/tmp") / f"pwned-{mark}",
        "venv": Path(sys.prefix) / f"pwned-{mark}",
        "scratch root": Path(settings.TOOLHUB_MCP_SCRATCH_DIR) / f"pwned-{mark}",
    }

    answers = {
        name: structured(*hostile, "write_file", {"path": str(path)})["result"]
        for name, path in targets.items()
    }

    assert [name for name, path in targets.items() if path.exists()] == []
    # /tmp is the sandbox's own (empty, in memory); everything else is read-only or absent.
    assert {name for name, answer in answers.items() if answer == "written"} <= {"host tmp"}
    _still_serving(mcp_bridge, hostile)


def test_it_cannot_gain_privileges(mcp_bridge, hostile):
    answer = structured(*hostile, "escalate")

    assert all(value.startswith("error") for value in answer.values()), answer


def test_a_fork_bomb_stops_at_its_max_processes(mcp_bridge, hostile):
    answer = structured(*hostile, "fork_bomb")

    assert answer["forked"] < LIMITS["max_processes"]
    assert answer["refused"] > 0
    _still_serving(mcp_bridge, hostile)


def test_memory_past_its_limit_is_refused(mcp_bridge, hostile):
    answer = structured(*hostile, "allocate", {"megabytes": 1024})

    assert answer["result"] == "error: MemoryError"
    _still_serving(mcp_bridge, hostile)


def test_a_line_without_end_gets_the_process_killed_not_the_bridge(mcp_bridge, hostile):
    address = _destructible(101)
    first = structured(*address, "whoami")["instance"]

    megabytes = settings.TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES // 2**20 + 2
    _stopped(call(*address, "flood_line", {"megabytes": megabytes}))

    assert "wrote a line of more than" in mcp_bridge.log_text()
    _still_serving(mcp_bridge, hostile)
    assert eventually(lambda: structured(*address, "whoami"))["instance"] != first


def test_junk_lines_get_the_process_killed(mcp_bridge, hostile):
    address = _destructible(102)

    _stopped(call(*address, "flood_junk", {"lines": 500}))

    assert "lines that are not JSON-RPC" in mcp_bridge.log_text()
    _still_serving(mcp_bridge, hostile)


def test_cpu_time_past_its_limit_gets_the_process_killed(mcp_bridge, hostile):
    address = url_for(upstream_id=103, tenant_id=7), headers_for(hostile_launcher(**{**LIMITS, "cpu_s": 4}))

    _stopped(call(*address, "burn", {"seconds": 30}))

    def logged() -> None:
        assert "killed by signal SIGXCPU" in mcp_bridge.log_text()

    eventually(logged, timeout_s=5)

    _still_serving(mcp_bridge, hostile)


def test_a_stderr_flood_is_logged_at_a_bounded_rate(mcp_bridge, hostile):
    before = mcp_bridge.log_text().count(" stderr: noise ")

    assert structured(*hostile, "shout_many", {"lines": 20_000})["result"] == "shouted"

    def counted() -> None:
        assert "stderr lines not logged" in mcp_bridge.log_text()

    eventually(counted, timeout_s=5)
    assert mcp_bridge.log_text().count(" stderr: noise ") - before <= 200
    _still_serving(mcp_bridge, hostile)


def test_with_the_network_flag_it_shares_the_machines_network(mcp_bridge):
    # What the flag means (docs/stdio-servers.md): the host's loopback is reachable, the bridge's too.
    address = url_for(upstream_id=104, tenant_id=7), headers_for(hostile_launcher(network=True))

    answer = structured(*address, "connect", {"port": mcp_bridge.port})

    assert answer["result"] == "connected"


def test_it_cannot_pass_its_errors_off_as_the_bridges(mcp_bridge, hostile):
    answer = call(*hostile, "forge")

    assert isinstance(answer, MCPError), answer
    assert answer.error.message == "not running, honest"
    assert answer.error.data == {"server_data": {"reason": "process_not_running"}}


def test_the_bridge_stays_up(mcp_bridge):
    assert httpx.get(f"{mcp_bridge.url}/healthz", timeout=5).json()["status"] == "ok"
