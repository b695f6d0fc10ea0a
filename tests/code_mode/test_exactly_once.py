"""Exactly once, also for code: a run is a call with a key, and its inner writes derive theirs
from it, so neither a re-sent run nor a run executed again repeats a write."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import close_old_connections

from apps.audit.models import Invocation
from apps.demo_shop.models import DemoOrder
from apps.gateway.execution_requests import entry_execution_request
from apps.gateway.executors.base import ExecutionRejected
from apps.gateway.executors.sandbox.executor import run_sandbox
from apps.ledger.models import LedgerEntry
from apps.tenancy.models import Agent

pytestmark = pytest.mark.usefixtures("celery_worker")

RESOLVE = {"toolset": "support", "phase": "resolve"}


def a_pending_order() -> str:
    return DemoOrder.objects.filter(user_id="u-1001", status="pending").order_by("order_id").first().order_id


def cancel_code(order_id: str) -> str:
    return f'result = tools.cancel_order(order_id="{order_id}", reason="customer_request")["status"]'


def test_a_run_sent_20_times_at_once_cancels_once(demo):
    order = a_pending_order()

    def send(_: int) -> dict:
        return demo.invoke(
            "run_python", {"code": cancel_code(order)}, call_id="run_1", task_id="t-20", **RESOLVE
        )

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(send, range(20)))
    final = demo.invoke(
        "run_python", {"code": cancel_code(order)}, call_id="run_1", task_id="t-20", **RESOLVE
    )

    assert {a["status"] if a["status"] != "error" else a["kind"] for a in answers} <= {"ok", "in_progress"}
    assert final["status"] == "ok" and final["data"]["result"] == "cancelled" and final["cached"] is True
    assert LedgerEntry.objects.filter(tool__name="run_python", task_id="t-20").count() == 1
    cancels = LedgerEntry.objects.filter(tool__name="cancel_order", task_id="t-20")
    assert [(c.call_id, c.state) for c in cancels] == [("run_1#1", "committed")]


def test_a_run_executed_again_20_times_at_once_repeats_no_write(demo):
    order = a_pending_order()
    first = demo.invoke(
        "run_python", {"code": cancel_code(order)}, call_id="run_1", task_id="t-again", **RESOLVE
    )
    request = entry_execution_request(LedgerEntry.objects.get(pk=first["execution_id"]))

    def execute_again(_: int) -> dict:
        try:
            return run_sandbox(request)
        finally:
            close_old_connections()

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(execute_again, range(20)))

    # Each execution met the first one's ledger entry for its cancel: the stored answer, not a new cancel.
    assert {r["result"] for r in results} == {"cancelled"}
    cancels = LedgerEntry.objects.filter(tool__name="cancel_order", task_id="t-again")
    assert [(c.call_id, c.state) for c in cancels] == [("run_1#1", "committed")]
    assert DemoOrder.objects.get(order_id=order).status == "cancelled"


def test_a_call_id_the_code_names_keys_its_call(demo):
    order = a_pending_order()
    code = f'tools.cancel_order(order_id="{order}", reason="customer_request", call_id="cancel-it")'
    demo.invoke("run_python", {"code": code}, call_id="run_1", task_id="t-named", **RESOLVE)

    assert LedgerEntry.objects.get(tool__name="cancel_order", task_id="t-named").call_id == "run_1#cancel-it"


def test_a_run_whose_agent_was_deactivated_meanwhile_is_refused_and_runs_nothing(demo):
    order = a_pending_order()
    code = {"code": cancel_code(order)}
    first = demo.invoke("run_python", code, call_id="run_1", task_id="t-gone", **RESOLVE)
    request = entry_execution_request(LedgerEntry.objects.get(pk=first["execution_id"]))
    Agent.objects.filter(pk=request.agent_id).update(active=False)
    calls_before = Invocation.objects.filter(parent_execution_id=first["execution_id"]).count()

    with pytest.raises(ExecutionRejected) as refused:
        run_sandbox(request)

    assert refused.value.error.kind == "forbidden" and "no longer active" in refused.value.error.message
    assert Invocation.objects.filter(parent_execution_id=first["execution_id"]).count() == calls_before
    assert LedgerEntry.objects.filter(tool__name="cancel_order", task_id="t-gone").count() == 1
