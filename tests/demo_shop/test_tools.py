"""The demo shop's python executors and reconcile hook, called as the gateway calls them."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import date

import pytest
from django.db import connection

from apps.demo_shop.models import DemoOrder
from apps.demo_shop.tools import cancel_order, cancel_order_outcome, get_order, search_orders
from apps.gateway.executors.base import ExecutionRejected, get_reconcile_callable, get_tool_callable

from .factories import DemoOrderFactory, execution_request

pytestmark = pytest.mark.django_db


def _search(**overrides: object) -> list[dict]:
    arguments = {"user_id": "u-1001", "status": "all", "start_date": "2026-01-01",
                 "end_date": "2026-03-31", "limit": 100, **overrides}
    return search_orders(execution_request("search_orders", **arguments))


def test_the_callables_are_registered_under_their_executor_names():
    assert get_tool_callable("demo_shop.search_orders") is search_orders
    assert get_tool_callable("demo_shop.get_order") is get_order
    assert get_tool_callable("demo_shop.cancel_order") is cancel_order
    assert get_reconcile_callable("demo_shop.cancel_order") is cancel_order_outcome


def test_search_returns_the_users_orders_in_the_range_and_status_oldest_first():
    # given
    DemoOrderFactory(order_id="ORD-000003", status="paid", placed_on=date(2026, 2, 10), amount_cents=700)
    DemoOrderFactory(order_id="ORD-000001", status="paid", placed_on=date(2026, 1, 1))
    DemoOrderFactory(order_id="ORD-000002", status="pending", placed_on=date(2026, 1, 15))
    DemoOrderFactory(order_id="ORD-000004", status="paid", placed_on=date(2026, 4, 1))  # after end
    DemoOrderFactory(order_id="ORD-000005", status="paid", placed_on=date(2026, 2, 1), user_id="u-2002")

    # when
    paid = _search(status="paid")
    every = _search(status="all")

    # then
    assert paid == [
        {"order_id": "ORD-000001", "status": "paid", "amount_cents": 5_000, "currency": "EUR",
         "placed_on": "2026-01-01"},
        {"order_id": "ORD-000003", "status": "paid", "amount_cents": 700, "currency": "EUR",
         "placed_on": "2026-02-10"},
    ]
    assert [o["order_id"] for o in every] == ["ORD-000001", "ORD-000002", "ORD-000003"]


def test_search_includes_both_ends_of_the_range_and_honours_the_limit():
    # given
    for day in (1, 2, 3, 4):
        DemoOrderFactory(order_id=f"ORD-00000{day}", placed_on=date(2026, 5, day))

    # when
    both_ends = _search(start_date="2026-05-01", end_date="2026-05-04")
    limited = _search(start_date="2026-05-01", end_date="2026-05-04", limit=2)

    # then
    assert [o["placed_on"] for o in both_ends] == ["2026-05-01", "2026-05-02", "2026-05-03", "2026-05-04"]
    assert [o["order_id"] for o in limited] == ["ORD-000001", "ORD-000002"]


def test_search_answers_an_empty_list_when_nothing_matches():
    DemoOrderFactory(status="paid", placed_on=date(2026, 2, 1))

    assert _search(status="cancelled") == []


def test_get_order_returns_the_users_order():
    DemoOrderFactory(order_id="ORD-000042", amount_cents=1_999, placed_on=date(2026, 6, 30))

    order = get_order(execution_request("get_order", user_id="u-1001", order_id="ORD-000042"))

    assert order == {"order_id": "ORD-000042", "status": "paid", "amount_cents": 1_999,
                     "currency": "EUR", "placed_on": "2026-06-30"}


def test_another_users_order_looks_exactly_like_a_missing_one():
    # given
    DemoOrderFactory(order_id="ORD-000042", user_id="u-2002")

    # when
    with pytest.raises(ExecutionRejected) as someone_elses:
        get_order(execution_request("get_order", user_id="u-1001", order_id="ORD-000042"))
    DemoOrder.objects.filter(order_id="ORD-000042").delete()
    with pytest.raises(ExecutionRejected) as missing:
        get_order(execution_request("get_order", user_id="u-1001", order_id="ORD-000042"))

    # then
    assert someone_elses.value.error.kind == "not_found"
    assert someone_elses.value.error.as_envelope() == missing.value.error.as_envelope()
    assert "u-2002" not in someone_elses.value.error.message


@pytest.mark.parametrize("status", ["pending", "paid"])
def test_cancel_cancels_a_pending_or_paid_order_with_the_reason(status):
    # given
    DemoOrderFactory(order_id="ORD-000042", status=status)

    # when
    result = cancel_order(execution_request(
        "cancel_order", user_id="u-1001", order_id="ORD-000042", reason="customer_request"
    ))

    # then
    assert result["status"] == "cancelled"
    assert result["order_id"] == "ORD-000042"
    stored = DemoOrder.objects.get(order_id="ORD-000042")
    assert (stored.status, stored.cancel_reason) == ("cancelled", "customer_request")


def test_cancelling_an_already_cancelled_order_is_a_business_rule_error_and_changes_nothing():
    # given
    DemoOrderFactory(order_id="ORD-000042", status="cancelled", cancel_reason="duplicate")

    # when
    with pytest.raises(ExecutionRejected) as refused:
        cancel_order(execution_request(
            "cancel_order", user_id="u-1001", order_id="ORD-000042", reason="fraud_suspected"
        ))

    # then
    error = refused.value.error
    assert error.kind == "business_rule"
    assert "already cancelled" in error.message
    assert "get_order" in error.hint
    assert DemoOrder.objects.get(order_id="ORD-000042").cancel_reason == "duplicate"


def test_cancelling_another_users_order_is_not_found_and_leaves_it_alone():
    # given
    DemoOrderFactory(order_id="ORD-000042", user_id="u-2002", status="paid")

    # when
    with pytest.raises(ExecutionRejected) as refused:
        cancel_order(execution_request(
            "cancel_order", user_id="u-1001", order_id="ORD-000042", reason="other"
        ))
    with pytest.raises(ExecutionRejected) as missing:
        get_order(execution_request("get_order", user_id="u-1001", order_id="ORD-000042"))

    # then
    assert refused.value.error.as_envelope() == missing.value.error.as_envelope()
    assert DemoOrder.objects.get(order_id="ORD-000042").status == "paid"


@pytest.mark.django_db(transaction=True)
def test_concurrent_cancels_of_one_order_cancel_it_once():
    # given
    DemoOrderFactory(order_id="ORD-000042", status="paid")
    start = threading.Barrier(8)

    def cancel(reason: str) -> str:
        start.wait()
        try:
            cancel_order(execution_request(
                "cancel_order", user_id="u-1001", order_id="ORD-000042", reason=reason
            ))
            return f"cancelled:{reason}"
        except ExecutionRejected as exc:
            return exc.error.kind
        finally:
            connection.close()

    # when
    reasons = ["customer_request", "duplicate", "fraud_suspected", "other"] * 2
    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(cancel, reasons))

    # then
    winners = [o for o in outcomes if o.startswith("cancelled:")]
    assert len(winners) == 1
    assert outcomes.count("business_rule") == 7
    assert DemoOrder.objects.get(order_id="ORD-000042").cancel_reason == winners[0].split(":")[1]


def test_reconcile_finds_a_cancel_that_happened():
    DemoOrderFactory(order_id="ORD-000042", status="cancelled", cancel_reason="other")

    answer = cancel_order_outcome(execution_request(
        "cancel_order", user_id="u-1001", order_id="ORD-000042", reason="other"
    ))

    assert answer.found is True
    assert answer.result["status"] == "cancelled"
    assert answer.result["order_id"] == "ORD-000042"


@pytest.mark.parametrize(("owner", "status"), [("u-1001", "paid"), ("u-2002", "cancelled")])
def test_reconcile_says_a_cancel_did_not_happen(owner, status):
    DemoOrderFactory(order_id="ORD-000042", user_id=owner, status=status)

    answer = cancel_order_outcome(execution_request(
        "cancel_order", user_id="u-1001", order_id="ORD-000042", reason="other"
    ))

    assert answer.found is False
    assert answer.result is None
