"""`make run` as a newcomer meets it: scripts/run.sh on a scratch var dir, then Ctrl-C.

The script itself, not `make run`: make would pip-install into .venv first, and the test's
environment has everything installed already.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import httpx
import pytest

from tests.ops.conftest import ROOT, free_port, wait_until
from tests.ops.make_run import alive, descendants, make_run_environment

pytestmark = pytest.mark.slow

# time, level, logger: message (apps/common/logs.PlainFormatter), one record per line.
PLAIN_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (DEBUG|INFO|WARNING|ERROR|CRITICAL) +[\w.]+: \S")
# What beat, the worker and gunicorn say while nothing happens, and the script's own probes.
IDLE_CHATTER = ("Sending due task", "] received", "] succeeded in", "Booting worker", "/readyz", "ready.")
# Beat sends its most frequent job every 10 s (toolhub/celery.py).
BEAT_PERIOD_S = 10


def test_make_run_shows_its_banner_when_up_logs_plain_lines_and_ctrl_c_stops_all_with_0(tmp_path):
    port, mcp_port, var_dir = free_port(), free_port(), tmp_path / "var"
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        run = subprocess.Popen(
            [str(ROOT / "scripts" / "run.sh")],
            cwd=ROOT,
            env=make_run_environment(var_dir, port, mcp_port),
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    children: set[int] = set()
    try:
        # Given make run, started
        wait_until(
            lambda: "AGENT_KEY=thk_" in out.read_text() or run.poll() is not None,
            timeout_s=180,
            what="the banner",
        )
        assert run.poll() is None, err.read_text()[-3000:]
        children = descendants(run.pid)
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5)
        refused = httpx.get(f"http://127.0.0.1:{port}/api/v1/tools", timeout=5)
        demo_mcp = httpx.get(f"http://127.0.0.1:{mcp_port}/healthz", timeout=5)

        # When it idles for a round of beat's jobs, then gets Ctrl-C
        time.sleep(BEAT_PERIOD_S + 2)
        logs = err.read_text()
        run.send_signal(signal.SIGINT)
        code = run.wait(timeout=60)

        # Then the banner came once everything answered, last, and the logs are one plain
        # line per record with no idle chatter; every process is gone and the exit is clean
        printed = out.read_text()
        assert ready.status_code == 200 and refused.status_code == 401
        assert printed.index("Starting the web server") < printed.index("ToolHub is running")
        assert f"Admin         http://127.0.0.1:{port}/admin/" in printed
        assert f"Demo MCP      http://127.0.0.1:{mcp_port}/mcp" in printed
        assert demo_mcp.status_code == 200
        assert "[tasks]" not in printed and "LocalTime ->" not in printed  # Celery's own banners
        lines = logs.splitlines()
        assert "INFO    toolhub.access: GET /api/v1/tools 401" in logs
        assert [line for line in lines if not PLAIN_LINE.match(line)] == []
        assert [line for line in lines if any(chatter in line for chatter in IDLE_CHATTER)] == []
        assert code == 0, err.read_text()[-3000:]
        assert "Stopped." in printed
        assert children and [pid for pid in children if alive(pid)] == []
        assert var_dir.joinpath("toolhub.sqlite3").exists()
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{mcp_port}/healthz", timeout=5)
    finally:
        if run.poll() is None:
            run.kill()
        for pid in children:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
