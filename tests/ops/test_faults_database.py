"""PostgreSQL stopped under load: ToolHub fails closed and fast, and the ledger stays true.

A real gunicorn (gunicorn.conf.py, two workers) serves the seeded demo on a throwaway
PostgreSQL cluster; agents refund and search concurrently while the cluster is stopped
like a crash (`pg_ctl stop -m immediate`) and started again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
import pytest
from django.core.cache import cache
from prometheus_client.parser import text_string_to_metric_families

from apps.demo_shop.tool_definitions import REFUND_PAYMENT
from tests.ops.conftest import ROOT, Server, ThrowawayPostgres, wait_until

pytestmark = pytest.mark.slow

CALLERS = 4
SLOW_ANSWER_S = 5.0
REFUND_TIMEOUT_S = REFUND_PAYMENT["timeout_s"]


@dataclass(frozen=True)
class Answer:
    call_id: str
    tool: str
    started: float
    elapsed: float
    status: int
    body: dict[str, Any]


class Load:
    """Agents calling refund_payment (sync writes) and search_orders in a loop, each call new."""

    def __init__(self, server: Server, token: str, orders: list[str]) -> None:
        self.server, self.token, self.orders = server, token, orders
        self.answers: list[Answer] = []
        self.transport_errors: list[str] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(n,)) for n in range(CALLERS)]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def _run(self, caller: int) -> None:
        with self.server.client() as http:
            n = 0
            while not self._stop.is_set():
                n += 1
                if n % 2:
                    tool = "refund_payment"
                    arguments = {"order_id": self.orders[(caller + n) % len(self.orders)], "amount_cents": 1}
                else:
                    tool = "search_orders"
                    arguments = {
                        "status": "paid",
                        "start_date": "2026-01-01",
                        "end_date": "2026-02-28",
                        "limit": 5,
                    }
                call_id = f"c{caller}-{n}"
                # One task per call: the loop guard would rightly stop one task repeating a search.
                body = {
                    "task_id": f"load-{call_id}",
                    "call": {"id": call_id, "name": tool, "arguments": arguments},
                }
                started = time.monotonic()
                try:
                    response = http.post(
                        "/api/v1/invoke", json=body, headers={"X-ToolHub-Session": self.token}
                    )
                except httpx.HTTPError as exc:
                    self.transport_errors.append(f"{call_id}: {type(exc).__name__}")
                    continue
                self.answers.append(
                    Answer(
                        call_id,
                        tool,
                        started,
                        time.monotonic() - started,
                        response.status_code,
                        response.json(),
                    )
                )

    def between(self, start: float, end: float) -> list[Answer]:
        return [a for a in self.answers if start <= a.started and a.started + a.elapsed <= end]


def _paid_orders(server: Server, token: str) -> list[str]:
    with server.client() as http:
        body = {
            "task_id": "setup",
            "call": {
                "id": "orders",
                "name": "search_orders",
                "arguments": {
                    "status": "paid",
                    "start_date": "2026-01-01",
                    "end_date": "2026-03-31",
                    "limit": 20,
                },
            },
        }
        envelope = http.post("/api/v1/invoke", json=body, headers={"X-ToolHub-Session": token}).json()
    return [order["order_id"] for order in envelope["data"]]


def _invoke_works(server: Server, token: str) -> bool:
    with server.client() as http:
        body = {
            "task_id": "probe",
            "call": {
                "id": f"p{time.monotonic_ns()}",
                "name": "get_order",
                "arguments": {"order_id": "ORD-000001"},
            },
        }
        return http.post("/api/v1/invoke", json=body, headers={"X-ToolHub-Session": token}).status_code == 200


def _settle_like_beat(server: Server, database_url: str) -> None:
    """Run the sweeper and the reconciler against the cluster until nothing is uncertain."""
    script = """
import time
from apps.ledger.models import LedgerEntry
from apps.gateway.reconciliation import ledger_reconcile_entry
from apps.ledger.reconciliation import entries_due_for_reconciliation, ledger_sweep
deadline = time.monotonic() + 30
while time.monotonic() < deadline and LedgerEntry.objects.filter(
    state__in=["intent", "unknown"], triage_since__isnull=True
).exists():
    ledger_sweep()
    for entry_id in entries_due_for_reconciliation():
        ledger_reconcile_entry(entry_id=entry_id)
    time.sleep(0.2)
"""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "toolhub.settings.base",
        "DATABASE_URL": database_url,
        "TOOLHUB_DEMO_PAYMENTS_URL": f"{server.url}/demo/payments",
        "TOOLHUB_EGRESS_ALLOW": "127.0.0.1:*",
        "TOOLHUB_SWEEP_GRACE_S": "0",
        "TOOLHUB_RECONCILE_BACKOFF_S": "0,0,0",
    }
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT, env=env, check=True, timeout=60
    )


def _ledger_and_refunds(database_url: str) -> tuple[dict[str, tuple[str, bool]], dict[str, int]]:
    with psycopg.connect(database_url) as conn:
        ledger = {
            key: (state, in_triage)
            for key, state, in_triage in conn.execute(
                "SELECT e.key, e.state, e.triage_since IS NOT NULL FROM ledger_ledgerentry e "
                "JOIN catalog_tool t ON t.id = e.tool_id WHERE t.name = 'refund_payment'"
            )
        }
        refunds = dict(
            conn.execute(
                "SELECT idempotency_key, count(*) FROM demo_shop_demorefund GROUP BY idempotency_key"
            )
        )
    return ledger, refunds


def test_stopping_postgresql_under_load_fails_closed_fast_and_keeps_the_ledger_consistent(
    gunicorn_server: Server, throwaway_postgres: ThrowawayPostgres
):
    server, cluster = gunicorn_server, throwaway_postgres
    token = server.session_token()
    orders = _paid_orders(server, token)

    with Load(server, token, orders) as load:
        # Some calls of every kind answered before the crash: on a busy machine the first
        # ones can take longer than any fixed pause.
        wait_until(lambda: len(load.answers) >= 2 * CALLERS, timeout_s=15, what="answers before the crash")
        crashed_at = time.monotonic()
        cluster.stop()
        # Cold caches too: the key lookup and the catalog memo must then ask the database.
        cache.clear()
        down_at = time.monotonic()
        wait_until(lambda: len(load.between(down_at, time.monotonic())) >= CALLERS, timeout_s=15,
                   what="answers while the database is down")
        with httpx.Client(base_url=server.url, timeout=10) as probe:
            readyz, healthz, admin = probe.get("/readyz"), probe.get("/healthz"), probe.get("/admin/login/")
        restarting_at = time.monotonic()
        cluster.start()
        wait_until(lambda: _invoke_works(server, token), timeout_s=15, what="invokes to work again")
        recovered_at = time.monotonic()
        wait_until(lambda: load.between(recovered_at, time.monotonic()), timeout_s=15,
                   what="answers after the database is back")
    _settle_like_beat(server, cluster.url)
    ledger, refunds = _ledger_and_refunds(cluster.url)

    before, during, after = (
        load.between(0, crashed_at),
        load.between(down_at, restarting_at),
        load.between(recovered_at, time.monotonic()),
    )
    assert not load.transport_errors
    assert sum(a.status == 200 and a.body["status"] == "ok" for a in before) >= CALLERS
    assert all(_answered_or_honestly_timed_out(a) for a in before), before
    assert len(during) >= CALLERS, "the load should keep calling while the database is down"
    for answer in during:
        assert answer.status == 503, answer
        assert answer.body["status"] == "error" and answer.body["kind"] == "unavailable", answer
        assert answer.body["recoverable"] is False and "same task_id and call ids" in answer.body["hint"]
        assert answer.elapsed < SLOW_ANSWER_S, answer
    assert readyz.status_code == 503 and readyz.json()["checks"]["database"] is False
    assert healthz.status_code == 200
    assert admin.status_code == 503 and admin.json()["kind"] == "unavailable"  # not a 500 page
    assert after and all(a.status == 200 for a in after)

    # No refund without its ledger row, none twice, and every uncertain row settled by the
    # sweeper and the reconciler: what the ledger says committed is exactly what was refunded.
    assert all(count == 1 for count in refunds.values())
    assert set(refunds) <= set(ledger)
    assert {state for state, _ in ledger.values()} <= {"committed", "failed"}
    assert {key for key, (state, _) in ledger.items() if state == "committed"} == set(refunds)
    refunded_ok = [a for a in load.answers if a.tool == "refund_payment" and a.body.get("status") == "ok"]
    assert refunded_ok and all(a.body["data"]["idempotency_key"] in refunds for a in refunded_ok)


def _answered_or_honestly_timed_out(answer: Answer) -> bool:
    """Before the crash every call is answered, except that a refund on a cold, loaded machine
    may run past its timeout: then it says `timeout` (the ledger settles it), never a failure."""
    if answer.body["status"] == "ok":
        return answer.status == 200
    return (
        answer.tool == "refund_payment"
        and answer.body.get("kind") == "timeout"
        and answer.elapsed >= REFUND_TIMEOUT_S
    )


def _refusals(server: Server, *, status: str, kind: str) -> float:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "toolhub_refusals_total" and sample.labels == {"status": status, "kind": kind}
    )


def test_requests_refused_while_postgresql_is_down_are_counted(
    gunicorn_server: Server, throwaway_postgres: ThrowawayPostgres
):
    server, cluster = gunicorn_server, throwaway_postgres
    token = server.session_token()
    before = _refusals(server, status="503", kind="unavailable")

    cluster.stop()
    cache.clear()  # the agent key must be looked up in the database
    try:
        with server.client() as http:
            answers = [
                http.post(
                    "/api/v1/invoke",
                    json={"task_id": "down", "call": {"id": f"c{n}", "name": "get_order", "arguments": {}}},
                    headers={"X-ToolHub-Session": token},
                )
                for n in range(3)
            ]
        during = _refusals(server, status="503", kind="unavailable")
    finally:
        cluster.start()
        wait_until(lambda: _invoke_works(server, token), timeout_s=15, what="invokes to work again")

    assert [answer.status_code for answer in answers] == [503, 503, 503]
    assert during - before == 3
