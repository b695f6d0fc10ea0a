"""gunicorn.conf.py for real: two worker processes, one set of metrics, JSON logs; connections
shared out among the workers."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.ops.conftest import ROOT, Server, free_port, wait_until

pytestmark = pytest.mark.slow


def _get_orders_count(server: Server) -> float:
    # A new connection per scrape: any of the workers may answer it.
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "toolhub_invocations_total" and sample.labels["tool"] == "get_order"
    )


def _worker_pids_with_metrics(server: Server) -> set[str]:
    return {
        match.group(1)
        for path in server.metrics_dir.glob("histogram_*.db")
        if (match := re.fullmatch(r"histogram_(\d+)\.db", path.name))
    }


def test_a_scrape_adds_up_the_counters_of_every_worker_process(gunicorn_server: Server):
    server = gunicorn_server
    token = server.session_token()
    before = _get_orders_count(server)
    sent = 0

    def both_workers_served() -> bool:
        nonlocal sent
        body = {
            "task_id": f"mp-{sent}",
            "call": {"id": "c1", "name": "get_order", "arguments": {"order_id": "ORD-000001"}},
        }
        # A new connection per call, so the two workers share the calls.
        response = httpx.post(
            f"{server.url}/api/v1/invoke",
            json=body,
            headers={"Authorization": f"Bearer {server.agent_key}", "X-ToolHub-Session": token},
            timeout=10,
        )
        assert response.status_code == 200
        sent += 1
        return sent >= 10 and len(_worker_pids_with_metrics(server)) >= 2

    wait_until(both_workers_served, timeout_s=20, what="both gunicorn workers to serve calls")
    scrapes = [_get_orders_count(server) - before for _ in range(10)]

    assert scrapes == [sent] * 10


def test_every_request_logs_one_json_line_with_its_request_id(gunicorn_server: Server):
    server = gunicorn_server

    response = httpx.get(f"{server.url}/healthz", headers={"X-Request-ID": "probe-7"}, timeout=10)

    def access_line() -> dict | None:
        lines = [
            json.loads(line) for line in server.log_path.read_text().splitlines() if line.startswith("{")
        ]
        return next((line for line in lines if line.get("request_id") == "probe-7"), None)

    line = wait_until(access_line, timeout_s=5, what="the access log line")
    assert response.headers["X-Request-ID"] == "probe-7"
    assert line["logger"] == "toolhub.access" and line["path"] == "/healthz" and line["status"] == 200
    assert all(text.startswith("{") for text in server.log_path.read_text().splitlines() if text.strip())


def _start_plain_gunicorn(env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    with open(log, "w") as out:
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("gunicorn")), "toolhub.wsgi:application"],
            cwd=ROOT,
            env={**env, "GUNICORN_BIND": f"127.0.0.1:{port}"},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return process, f"http://127.0.0.1:{port}"


def test_two_servers_started_from_one_home_leave_no_shared_control_socket(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "DJANGO_SETTINGS_MODULE": "toolhub.settings.base",
        "WEB_CONCURRENCY": "1",
    }
    for name in ("XDG_RUNTIME_DIR", "PROMETHEUS_MULTIPROC_DIR", "GUNICORN_CONTROL_SOCKET"):
        env.pop(name, None)
    servers = [_start_plain_gunicorn(env, tmp_path / f"gunicorn-{n}.log") for n in range(2)]

    def all_up() -> bool:
        for n, (process, _) in enumerate(servers):
            if process.poll() is not None:
                raise AssertionError((tmp_path / f"gunicorn-{n}.log").read_text()[-3000:])
        try:
            return all(httpx.get(f"{url}/healthz", timeout=1).status_code == 200 for _, url in servers)
        except httpx.HTTPError:
            return False

    try:
        wait_until(all_up, timeout_s=30, what="both gunicorn servers to answer /healthz")
        sockets_while_both_ran = sorted(str(path) for path in home.rglob("*.ctl"))
        first, _ = servers[0]
        os.killpg(first.pid, signal.SIGTERM)
        first.wait(timeout=30)
        second_still_serves = httpx.get(f"{servers[1][1]}/healthz", timeout=5).status_code == 200
    finally:
        for process, _ in servers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)

    assert sockets_while_both_ran == []
    assert not (home / ".gunicorn").exists()
    assert second_still_serves


def _established_by_process(pids: list[int], port: int) -> Counter[int]:
    """How many connections to local `port` each of `pids` holds (ESTABLISHED, from /proc)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
            inodes.add(fields[9])
    held: Counter[int] = Counter()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            target = os.readlink(fd) if fd.is_symlink() else ""
            if target.startswith("socket:[") and target[8:-1] in inodes:
                held[pid] += 1
    return held


def test_keep_alive_connections_opened_together_are_shared_out_among_the_workers(tmp_path: Path):
    # An agent's pool of 8 connections, opened at once, to 4 workers: gunicorn's own threaded
    # worker let the first one awake take most of them (often 6 to 8), and serve them alone.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "toolhub.settings.base", "WEB_CONCURRENCY": "4"}
    for name in ("PROMETHEUS_MULTIPROC_DIR", "GUNICORN_CONTROL_SOCKET"):
        env.pop(name, None)
    process, url = _start_plain_gunicorn(env, tmp_path / "gunicorn.log")
    port = int(url.rsplit(":", 1)[1])
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    pool: list[socket.socket] = []
    try:
        def four_workers_up() -> bool:
            if process.poll() is not None:
                raise AssertionError((tmp_path / "gunicorn.log").read_text()[-3000:])
            try:
                answered = httpx.get(f"{url}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False
            return answered and len(children.read_text().split()) == 4

        wait_until(four_workers_up, timeout_s=30, what="gunicorn's 4 workers")
        time.sleep(2)  # each worker's start-up (gunicorn.conf.py post_worker_init) is over
        workers = [int(pid) for pid in children.read_text().split()]

        pool = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(8)]
        for connection in pool:
            connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        answers = [connection.recv(4096) for connection in pool]
        held = _established_by_process(workers, port)
    finally:
        for connection in pool:
            connection.close()
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)

    assert all(answer.startswith(b"HTTP/1.1 200") for answer in answers), answers[0][:300]
    assert sum(held.values()) == 8
    assert max(held.values()) <= 3, f"connections held by each worker: {sorted(held.values())}"
