"""Stopping `make run` as people do: Ctrl-C in its terminal, or `kill -INT` of make's pid
from another shell. Both stop all five processes cleanly; Ctrl-C exits 0.

`make` itself runs here, in a pseudo-terminal of its own (it is the terminal's foreground
process group, as in a shell): make's own handling of SIGINT is what is under test.
`-o .venv/.installed-run` keeps it from reinstalling the environment the tests run in.
"""

from __future__ import annotations

import os
import pty
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.ops.conftest import ROOT, free_port, wait_until
from tests.ops.make_run import alive, descendants, kill_leftovers, make_run_environment

pytestmark = pytest.mark.slow

INCOMPLETE_RESPONSE = "ASGI callable returned without completing response"


@dataclass
class MakeInATerminal:
    pid: int
    master: int
    port: int
    mcp_port: int
    bridge_port: int
    output: bytearray = field(default_factory=bytearray)
    children: set[int] = field(default_factory=set)
    status: int | None = None

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace")

    def drain(self) -> None:
        """Read the terminal until it closes (a full terminal would block make's output)."""
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output.extend(chunk)

    def wait(self, timeout_s: float) -> int | None:
        """make's wait status once it ended, None if it is still running after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while self.status is None and time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
            else:
                time.sleep(0.2)
        return self.status


@pytest.fixture
def make_in_a_terminal(tmp_path: Path) -> Iterator[MakeInATerminal]:
    port, mcp_port, bridge_port = free_port(), free_port(), free_port()
    env = make_run_environment(tmp_path / "var", port, mcp_port, bridge_port)
    pid, master = pty.fork()
    if pid == 0:  # the child: make, the foreground process group of a new terminal
        os.chdir(ROOT)
        # As a shell starts it: the signals at their defaults and none blocked, whatever a
        # library earlier in this test process did to its own (an ignored or blocked SIGINT
        # would be inherited, and make would never see the kill -INT).
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.execvpe("make", ["make", "-o", ".venv/.installed-run", "run"], env)
    running = MakeInATerminal(pid=pid, master=master, port=port, mcp_port=mcp_port, bridge_port=bridge_port)
    threading.Thread(target=running.drain, daemon=True).start()
    try:
        wait_until(lambda: "AGENT_KEY=thk_" in running.text or running.wait(0) is not None,
                   timeout_s=180, what="the banner")
        assert running.status is None, running.text[-3000:]
        running.children = descendants(pid)
        yield running
    finally:
        if running.wait(0) is None:
            os.kill(pid, signal.SIGKILL)
            running.wait(10)
        kill_leftovers(running.children | descendants(pid))
        os.close(master)


def _call_the_demo_mcp_server(running: MakeInATerminal) -> None:
    """An agent's call of track_shipment: the server now holds an MCP session to the demo
    shipping server, as it does after any use of the demo."""
    key = next(line.split("=", 1)[1].strip() for line in running.text.splitlines()
               if line.startswith("AGENT_KEY="))
    with httpx.Client(base_url=f"http://127.0.0.1:{running.port}", timeout=30,
                      headers={"Authorization": f"Bearer {key}"}) as agent:
        token = agent.post("/api/v1/sessions", json={"subject": "u-1001"}).json()["token"]
        call = {"id": "call_1", "name": "track_shipment", "arguments": {"shipment_id": "SHP-000042"}}
        for n in range(3):  # spread over the web workers
            called = agent.post("/api/v1/invoke", headers={"X-ToolHub-Session": token},
                                json={"task_id": f"t-stop-{n}", "call": call}).json()
            assert called["status"] == "ok", called


def _all_stopped(running: MakeInATerminal) -> None:
    assert running.children and [pid for pid in running.children if alive(pid)] == []
    for port in (running.mcp_port, running.bridge_port):
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{running.port}/healthz", timeout=5)


def test_ctrl_c_in_the_terminal_stops_all_five_quietly_and_make_exits_0(make_in_a_terminal):
    running = make_in_a_terminal
    # Given make run in a terminal, used by an agent (MCP sessions open to the demo server)
    _call_the_demo_mcp_server(running)
    before = len(running.output)

    # When the user presses Ctrl-C
    os.write(running.master, b"\x03")
    status = running.wait(timeout_s=60)

    # Then make exits 0 with every process gone, and the stop says nothing alarming
    assert status is not None, "make run did not stop on Ctrl-C"
    said = bytes(running.output[before:]).decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, said[-3000:]
    assert "Stopped." in said
    assert INCOMPLETE_RESPONSE not in said, said[-3000:]
    assert "Error" not in said and "Traceback" not in said, said[-3000:]
    _all_stopped(running)


def test_kill_int_of_makes_pid_stops_all_five(make_in_a_terminal):
    running = make_in_a_terminal
    # Given make run in a terminal
    # When another shell sends SIGINT to make's pid (only to make: not its process group)
    os.kill(running.pid, signal.SIGINT)
    status = running.wait(timeout_s=60)

    # Then everything stops; make ends as a process interrupted by SIGINT does
    assert status is not None, f"make run did not stop on kill -INT of its pid:\n{running.text[-3000:]}"
    assert "Stopped." in running.text
    assert os.waitstatus_to_exitcode(status) in {0, -signal.SIGINT}
    _all_stopped(running)
