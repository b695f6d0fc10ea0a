"""The demo tools end to end over HTTP, with a session for u-1001 (issue: the invoke pipeline)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from apps.demo_shop.models import DemoOrder, DemoRefund
from apps.ledger.models import LedgerEntry, LedgerState

SEARCH = '{"status": "paid", "start_date": "2026-01-01", "end_date": "2026-03-31", "limit": 5}'


def an_order(user_id: str, status: str = "paid") -> DemoOrder:
    return DemoOrder.objects.filter(user_id=user_id, status=status).order_by("order_id").first()


def test_search_returns_only_the_session_users_orders(demo):
    body = demo.invoke("search_orders", SEARCH)

    assert body["status"] == "ok" and body["tool"] == "search_orders"
    ids = [o["order_id"] for o in body["data"]]
    assert 0 < len(ids) <= 5
    assert set(DemoOrder.objects.filter(order_id__in=ids).values_list("user_id", flat=True)) == {"u-1001"}


def test_not_cancelled_is_refused_before_the_shop_is_asked(demo):
    body = demo.invoke("search_orders", SEARCH.replace('"paid"', '"not cancelled"'))

    assert body["kind"] == "invalid_args" and "pending, paid, cancelled, all" in body["hint"]


def test_a_reversed_or_too_long_date_range_is_explained(demo):
    reversed_range = demo.invoke("search_orders", SEARCH.replace("2026-01-01", "2026-04-30"), call_id="c2")
    too_long = demo.invoke("search_orders", SEARCH.replace("2026-03-31", "2026-06-30"), call_id="c3")

    assert reversed_range["kind"] == "invalid_args" and "swap" in reversed_range["hint"].lower()
    assert too_long["kind"] == "invalid_args" and "90" in too_long["hint"]


def test_an_empty_search_carries_its_meaning(demo):
    # The demo's orders are all dated 2026-01-01 to 2026-06-30: December 2025 has none.
    body = demo.invoke(
        "search_orders", SEARCH.replace("2026-01-01", "2025-12-01").replace("2026-03-31", "2025-12-31")
    )

    assert body["status"] == "empty" and "does not mean" in body["meaning"]


def test_another_users_order_looks_exactly_like_a_missing_one(demo):
    foreign_id = an_order("u-2002").order_id
    foreign = demo.invoke("get_order", {"order_id": foreign_id}, call_id="same")
    missing = demo.invoke("get_order", {"order_id": "ORD-999999"}, call_id="same", task_id="t-2")

    assert foreign["kind"] == missing["kind"] == "not_found"
    assert json.dumps(foreign).replace(foreign_id, "ORD-999999") == json.dumps(missing)


def test_a_model_sent_user_id_of_another_user_is_forbidden(demo):
    body = demo.invoke("get_order", {"order_id": an_order("u-1001").order_id, "user_id": "u-2002"})

    assert body["kind"] == "forbidden"


def test_cancel_commits_once_and_its_replay_is_cached(demo):
    order = an_order("u-1001")
    arguments = {"order_id": order.order_id, "reason": "customer_request"}

    first = demo.invoke("cancel_order", arguments)
    replay = demo.invoke("cancel_order", arguments)

    assert first["status"] == "ok" and first["data"]["status"] == "cancelled"
    assert replay["cached"] is True and replay["data"] == first["data"]
    order.refresh_from_db()
    assert order.status == "cancelled"
    assert LedgerEntry.objects.get().state == LedgerState.COMMITTED


def test_a_refund_goes_through_the_payments_upstream_once(demo):
    order = an_order("u-1001")

    body = demo.invoke("refund_payment", {"order_id": order.order_id, "amount_cents": 100})

    assert body["status"] == "ok" and body["data"]["refund_id"].startswith("re_")
    refund = DemoRefund.objects.get()
    assert refund.idempotency_key == LedgerEntry.objects.get().key
    assert refund.amount_cents == 100


def test_twenty_concurrent_identical_refunds_refund_once(demo):
    order = an_order("u-1001")
    arguments = {"order_id": order.order_id, "amount_cents": 250}

    with ThreadPoolExecutor(max_workers=20) as pool:
        bodies = list(pool.map(lambda _: demo.invoke("refund_payment", arguments), range(20)))

    assert DemoRefund.objects.count() == 1
    entry = LedgerEntry.objects.get()
    assert entry.state == LedgerState.COMMITTED
    fresh = [b for b in bodies if b["status"] == "ok" and not b["cached"]]
    assert len(fresh) == 1
    others = [b for b in bodies if b not in fresh]
    assert all(b.get("cached") is True or b.get("kind") == "in_progress" for b in others), others


def test_an_upstream_slower_than_the_timeout_leaves_the_refund_unknown(demo, republish_refund):
    republish_refund(path="/refunds?delay_ms=1500", timeout_s=0.5)
    order = an_order("u-1001")

    body = demo.invoke("refund_payment", {"order_id": order.order_id, "amount_cents": 100})
    replay = demo.invoke("refund_payment", {"order_id": order.order_id, "amount_cents": 100})

    assert body["kind"] == "timeout" and body["recoverable"] is False and "Do not call again" in body["hint"]
    assert replay["kind"] == "outcome_unknown"
    assert LedgerEntry.objects.get().state == LedgerState.UNKNOWN
    assert DemoRefund.objects.count() == 1  # the upstream did refund; nobody refunded twice


def test_an_upstream_failing_after_recording_leaves_the_refund_unknown(demo, republish_refund):
    republish_refund(path="/refunds?fail=after")

    body = demo.invoke("refund_payment", {"order_id": an_order("u-1001").order_id, "amount_cents": 100})

    assert body["kind"] == "upstream_error" and "Do not call again" in body["hint"]
    assert LedgerEntry.objects.get().state == LedgerState.UNKNOWN
    assert DemoRefund.objects.count() == 1


def test_a_refused_connection_is_failed_because_nothing_was_sent(demo, republish_refund):
    republish_refund(url="http://127.0.0.1:9")

    body = demo.invoke("refund_payment", {"order_id": an_order("u-1001").order_id, "amount_cents": 100})
    replay = demo.invoke("refund_payment", {"order_id": an_order("u-1001").order_id, "amount_cents": 100})

    assert body["kind"] == "upstream_error" and "not done" in body["hint"]
    assert LedgerEntry.objects.get().state == LedgerState.FAILED
    assert replay["cached"] is True
    assert not DemoRefund.objects.exists()


def test_an_amount_above_the_order_is_a_documented_rejection(demo, republish_refund):
    # given: a version without the rule that refuses it first (test_demo_state_rules.py), so
    # the provider's own refusal is what the model reads
    republish_refund(rules=[])
    order = an_order("u-1001")

    body = demo.invoke("refund_payment", {"order_id": order.order_id, "amount_cents": order.amount_cents + 1})

    assert body["status"] == "error" and body["kind"] == "invalid_args"
    assert LedgerEntry.objects.get().state == LedgerState.FAILED
    assert not DemoRefund.objects.exists()


def test_the_providers_refusal_of_a_refund_past_what_is_left_is_a_business_rule(demo, republish_refund):
    # given: ORD-000008 of u-1001, 41,764 cents, and a version without ToolHub's own check of
    # what is left (the provider still refuses, as it does when two refunds race)
    republish_refund(rules=[])
    full = {"order_id": "ORD-000008", "amount_cents": 41_764}

    # when: two full refunds, each its own call
    first = demo.invoke("refund_payment", full, call_id="refund_1")
    second = demo.invoke("refund_payment", full, call_id="refund_2")
    third = demo.invoke("refund_payment", {"order_id": "ORD-000008", "amount_cents": 1}, call_id="refund_3")

    # then: the upstream refused the second; the model reads why and what to do
    assert first["status"] == "ok"
    assert second["status"] == "error" and second["kind"] == "business_rule"
    assert "already refunded in full (41764 cents)" in second["message"]
    assert "Do not send it again unchanged" in second["hint"]
    assert third["kind"] == "business_rule"
    assert list(DemoRefund.objects.values_list("amount_cents", flat=True)) == [41_764]
    states = dict(LedgerEntry.objects.values_list("call_id", "state"))
    assert states == {"refund_1": "committed", "refund_2": "failed", "refund_3": "failed"}


def test_a_partial_refund_leaves_the_rest_refundable_and_the_refusal_names_it(demo):
    def refund(amount_cents: int, call_id: str) -> dict:
        return demo.invoke("refund_payment", {"order_id": "ORD-000008", "amount_cents": amount_cents},
                           call_id=call_id)

    refund(40_000, "refund_1")

    body = refund(2_000, "refund_2")
    rest = refund(1_764, "refund_3")

    assert body["kind"] == "business_rule"
    assert "only 1764 cents of order ORD-000008 are left to refund" in body["message"]
    assert rest["status"] == "ok"
    assert sum(DemoRefund.objects.values_list("amount_cents", flat=True)) == 41_764
    # refused before its ledger entry, by the rule of what is left
    assert sorted(LedgerEntry.objects.values_list("call_id", flat=True)) == ["refund_1", "refund_3"]


def test_the_refund_tool_says_it_refunds_at_most_what_is_left(demo):
    tools = demo.http.get("/api/v1/tools", params={"format": "openai"}).json()

    assert "at most what is left to refund of the order" in json.dumps(tools)
