"""run_python in the demo: one call does the work of many, and every call inside is governed."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest

from apps.audit.models import Invocation
from apps.catalog.models import Tool
from apps.common.catalog_generation import catalog_changed
from apps.demo_shop.models import DemoOrder, DemoRefund
from apps.ledger.models import LedgerEntry
from apps.tenancy.models import Grant, Tenant, TenantPolicy

pytestmark = pytest.mark.usefixtures("celery_worker")

RESOLVE = {"toolset": "support", "phase": "resolve"}
JANUARY_TOTALS = """
totals = {}
for order in tools.search_orders(status="paid", start_date="2026-01-01", end_date="2026-01-31", limit=100):
    totals[order["currency"]] = totals.get(order["currency"], 0) + order["amount_cents"]
print(len(totals), "currencies")
result = totals
"""


def run(demo: Any, code: str, *, call_id: str = "run_1", task_id: str = "t-run") -> dict[str, Any]:
    return demo.invoke("run_python", {"code": code}, call_id=call_id, task_id=task_id, **RESOLVE)


def test_january_totals_per_currency_in_one_call_equal_the_tools_one_by_one(demo):
    body = run(demo, JANUARY_TOTALS)

    one_by_one = demo.invoke(
        "search_orders",
        {"status": "paid", "start_date": "2026-01-01", "end_date": "2026-01-31", "limit": 100},
        task_id="t-direct",
        **RESOLVE,
    )
    expected: dict[str, int] = defaultdict(int)
    for order in one_by_one["data"]:
        expected[order["currency"]] += order["amount_cents"]
    assert body["status"] == "ok", body
    assert body["data"] == {"result": dict(expected), "stdout": f"{len(expected)} currencies\n", "calls": 1}
    assert expected, "the demo has paid orders in January"


def test_each_inner_call_is_logged_with_the_run_as_its_parent(demo):
    body = run(demo, JANUARY_TOTALS)

    inner = Invocation.objects.get(parent_execution_id=body["execution_id"])
    assert (inner.tool_name, inner.call_id, inner.status, inner.task_id) == (
        "search_orders",
        "run_1#1",
        "ok",
        "t-run",
    )


def test_another_users_order_is_not_found_inside_the_code_too(demo):
    foreign = DemoOrder.objects.filter(user_id="u-2002").order_by("order_id").first().order_id
    code = f"""
try:
    tools.get_order(order_id="{foreign}")
except ToolCallError as error:
    result = error.envelope["kind"]
"""
    body = run(demo, code)

    assert body["status"] == "ok" and body["data"]["result"] == "not_found"


def test_a_user_id_in_the_code_cannot_act_for_another_user(demo):
    mine = DemoOrder.objects.filter(user_id="u-1001", status="pending").order_by("order_id").first().order_id
    code = f"""
try:
    tools.cancel_order(order_id="{mine}", reason="customer_request", user_id="u-2002")
except ToolCallError as error:
    result = error.envelope["kind"]
"""
    body = run(demo, code)

    assert body["data"]["result"] == "forbidden"
    assert DemoOrder.objects.get(order_id=mine).status == "pending"


def test_a_tool_the_agent_is_not_granted_is_not_in_the_code(demo):
    Grant.objects.filter(tool__name="refund_payment").delete()
    catalog_changed()
    code = """
try:
    tools.refund_payment(order_id="ORD-000001", amount_cents=100)
except AttributeError as error:
    result = str(error)
"""
    body = run(demo, code)

    assert "refund_payment" in body["data"]["result"] and "search_orders" in body["data"]["result"]
    assert not DemoRefund.objects.exists()


def test_a_replayed_run_answers_the_first_result_and_repeats_no_write(demo):
    order = DemoOrder.objects.filter(user_id="u-1001", status="pending").order_by("order_id").first().order_id
    code = f'result = tools.cancel_order(order_id="{order}", reason="customer_request")["status"]'
    first = run(demo, code)
    again = run(demo, code)

    assert first["status"] == "ok" and first["data"]["result"] == "cancelled", first
    assert again["data"] == first["data"] and again["cached"] is True
    writes = LedgerEntry.objects.filter(tool__name="cancel_order", parent_id=first["execution_id"])
    assert [(w.call_id, w.state) for w in writes] == [("run_1#1", "committed")]


def test_an_exception_in_the_code_quotes_the_users_code_only(demo):
    body = run(demo, "x = 1\ny = x / 0\n")

    assert (body["status"], body["kind"], body["recoverable"]) == ("error", "invalid_args", True)
    assert "ZeroDivisionError" in body["message"]
    assert 'File "<code>", line 2' in body["raw"]["traceback"]
    assert "apps/" not in json.dumps(body)


def test_a_per_task_budget_counts_the_calls_of_code_too(demo):
    TenantPolicy.objects.create(
        tenant=Tenant.objects.get(slug="demo"), tool=Tool.objects.get(name="get_order"), task_call_budget=2
    )
    catalog_changed()
    orders = DemoOrder.objects.filter(user_id="u-1001").order_by("order_id")
    mine = orders.values_list("order_id", flat=True)[:3]
    code = f"""
kinds = []
for order_id in {list(mine)!r}:
    try:
        tools.get_order(order_id=order_id)
        kinds.append("ok")
    except ToolCallError as error:
        kinds.append(error.envelope["kind"])
result = kinds
"""
    body = run(demo, code)

    assert body["data"]["result"] == ["ok", "ok", "business_rule"]


def test_the_same_call_repeated_by_code_is_a_loop(demo):
    code = """
kinds = []
for _ in range(6):
    try:
        tools.search_orders(status="paid", start_date="2026-01-01", end_date="2026-01-31", limit=5)
        kinds.append("ok")
    except ToolCallError as error:
        kinds.append(error.envelope["kind"])
result = kinds
"""
    body = run(demo, code)

    assert "loop_detected" in body["data"]["result"] and body["data"]["result"][0] == "ok"
