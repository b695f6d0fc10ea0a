"""Calls of the demo shop's tools that ToolHub refuses as `invalid_args`: the mistakes the
existing tests make on purpose (test_schema.py, test_rules.py, the demo's e2e tests) and the
ones models make most. Each is one call as a model would send it, before normalizers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEARCH: dict[str, Any] = {"status": "paid", "start_date": "2026-01-01", "end_date": "2026-03-31", "limit": 5}
ORDER = "ORD-000042"


@dataclass(frozen=True)
class Miscall:
    id: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)


def _search(**changes: Any) -> dict[str, Any]:
    return {key: value for key, value in {**SEARCH, **changes}.items() if value is not ...}


MISCALLS: list[Miscall] = [
    # search_orders: the enum
    Miscall("status-not-cancelled", "search_orders", _search(status="not cancelled")),
    Miscall("status-open", "search_orders", _search(status="open")),
    Miscall("status-misspelled", "search_orders", _search(status="canceled")),
    Miscall("status-a-number", "search_orders", _search(status=3)),
    # search_orders: the date rules
    Miscall("dates-reversed", "search_orders", _search(start_date="2026-04-30")),
    Miscall("span-over-90-days", "search_orders", _search(end_date="2026-06-30")),
    Miscall("span-over-a-year", "search_orders", _search(start_date="2025-01-01", end_date="2026-06-30")),
    Miscall("reversed-too-long", "search_orders", _search(start_date="2026-06-30", end_date="2026-01-01")),
    Miscall("month-13", "search_orders", _search(start_date="2026-13-45")),
    Miscall("february-30", "search_orders", _search(end_date="2026-02-30")),
    Miscall("both-dates-unreal", "search_orders", _search(start_date="2026-02-31", end_date="2026-04-31")),
    Miscall("date-month-first", "search_orders", _search(start_date="01/31/2026")),
    Miscall("date-in-words", "search_orders", _search(end_date="yesterday")),
    # search_orders: bounds and types of limit
    Miscall("limit-0", "search_orders", _search(limit=0)),
    Miscall("limit-500", "search_orders", _search(limit=500)),
    Miscall("limit-negative", "search_orders", _search(limit=-3)),
    Miscall("limit-ten", "search_orders", _search(limit="ten")),
    Miscall("limit-as-text", "search_orders", _search(limit="20")),
    Miscall("limit-fraction", "search_orders", _search(limit=2.5)),
    Miscall("limit-null", "search_orders", _search(limit=None)),
    Miscall("limit-boolean", "search_orders", _search(limit=True)),
    # search_orders: fields missing or extra
    Miscall("limit-missing", "search_orders", _search(limit=...)),
    Miscall("status-and-end-missing", "search_orders", _search(status=..., end_date=...)),
    Miscall("no-arguments", "search_orders", {}),
    Miscall("extra-field", "search_orders", _search(sql_where="1=1")),
    Miscall("key-misspelled", "search_orders", {**_search(status=...), "stauts": "paid"}),
    Miscall(
        "four-problems-at-once",
        "search_orders",
        {"status": "open", "start_date": "01/02/2026", "end_date": "2026-01-31", "limit": 0, "foo": 1},
    ),
    # get_order
    Miscall("order-id-short", "get_order", {"order_id": " ord-8"}),
    Miscall("order-id-a-number", "get_order", {"order_id": 8}),
    Miscall("order-id-missing", "get_order", {}),
    Miscall("order-id-five-digits-and-extra", "get_order", {"order_id": "ORD-12345", "include_items": True}),
    # cancel_order
    Miscall("reason-missing", "cancel_order", {"order_id": ORDER}),
    Miscall("reason-in-words", "cancel_order", {"order_id": ORDER, "reason": "because the user asked"}),
    Miscall("reason-capitalised", "cancel_order", {"order_id": ORDER, "reason": "Customer Request"}),
    Miscall("cancel-nothing-right", "cancel_order", {"id": "42", "why": "user"}),
    # refund_payment
    Miscall("amount-0", "refund_payment", {"order_id": ORDER, "amount_cents": 0}),
    Miscall("amount-negative", "refund_payment", {"order_id": ORDER, "amount_cents": -500}),
    Miscall("amount-in-units", "refund_payment", {"order_id": ORDER, "amount_cents": "12.50"}),
    Miscall("amount-as-text", "refund_payment", {"order_id": ORDER, "amount_cents": "1250"}),
    Miscall("amount-missing", "refund_payment", {"order_id": ORDER}),
]
