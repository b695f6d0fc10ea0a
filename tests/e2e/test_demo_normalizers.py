"""The demo tools' declared normalizers make sloppy but meaningful values canonical, before the
schema judges them (issue 11, item 6: the schema ran first and refused them)."""

from __future__ import annotations

from apps.demo_shop.models import DemoOrder

SEARCH = {"status": "paid", "start_date": "2026-01-01", "end_date": "2026-01-31", "limit": 5}


def first_paid_order() -> DemoOrder:
    return DemoOrder.objects.filter(user_id="u-1001", status="paid").order_by("order_id").first()


def test_an_order_id_in_lower_case_and_with_spaces_finds_the_order(demo):
    order_id = first_paid_order().order_id

    lower = demo.invoke("get_order", {"order_id": order_id.lower()}, call_id="c1")
    padded = demo.invoke("get_order", {"order_id": f"  {order_id.lower()} "}, call_id="c2")

    assert lower["status"] == padded["status"] == "ok"
    assert lower["data"]["order_id"] == padded["data"]["order_id"] == order_id


def test_a_status_in_another_case_searches_that_status(demo):
    canonical = demo.invoke("search_orders", SEARCH, call_id="c1")

    sloppy = demo.invoke("search_orders", {**SEARCH, "status": " Paid"}, call_id="c2")

    assert sloppy["status"] == "ok" and sloppy["data"] == canonical["data"]


def test_dates_written_with_slashes_or_as_datetimes_take_the_canonical_form(demo):
    canonical = demo.invoke("search_orders", SEARCH, call_id="c1")
    sloppy_dates = {"start_date": "2026/01/01", "end_date": "2026-01-31T18:00:00Z"}

    sloppy = demo.invoke("search_orders", {**SEARCH, **sloppy_dates}, call_id="c2")

    assert sloppy["status"] == "ok" and sloppy["data"] == canonical["data"]


def test_a_value_no_normalizer_can_fix_is_still_refused_with_the_allowed_forms(demo):
    wrong_type = demo.invoke("get_order", {"order_id": 8}, call_id="c1")
    not_a_date = demo.invoke("search_orders", {**SEARCH, "start_date": "01/31/2026"}, call_id="c2")

    assert wrong_type["kind"] == "invalid_args"
    assert "expected a string, got an integer" in wrong_type["message"]
    assert not_a_date["kind"] == "invalid_args" and "2026-01-31" in not_a_date["hint"]
