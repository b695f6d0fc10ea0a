"""gunicorn.conf.py for real: two worker processes, one set of metrics, JSON logs."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.ops.conftest import Server, wait_until

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
