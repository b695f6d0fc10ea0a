"""The demo shop's tools as version 1 definitions (its four and code mode's `run_python`),
and the `support` toolset.

Data only: `demo_seed` publishes them. Descriptions are what the model reads, so each says
what the tool does, its limits, and when not to use it. Every shop tool carries a `user_id`
bound to the session subject: the exports drop it and the gateway fills it, so the model
can never act for another user.
"""

from __future__ import annotations

from typing import Any

DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
ORDER_ID_PATTERN = r"^ORD-\d{6}$"
# Refunds above this wait for an operator (orders are 500 to 50,000 cents).
REFUND_APPROVAL_ABOVE_CENTS = 45_000

_USER_ID = {
    "type": "string",
    "description": "The end user the call is for. Filled from the session by ToolHub.",
}
_ORDER_ID = {
    "type": "string",
    "pattern": ORDER_ID_PATTERN,
    "description": "The order id as shown to the user: ORD- and six digits, e.g. ORD-000042.",
}
_BIND_USER = {"user_id": {"source": "session.subject", "policy": "must_match"}}
# What the three tools about one order have in common: its id, normalized; a small result.
_ONE_ORDER: dict[str, Any] = {
    "context_bindings": _BIND_USER,
    "normalizers": {"order_id": ["trim", "upper"]},
    "max_chars": 2000,
}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    """A strict object schema: every property required, nothing else allowed."""
    return {
        "type": "object",
        "properties": {"user_id": _USER_ID, **properties},
        "required": ["user_id", *properties],
        "additionalProperties": False,
    }


SEARCH_ORDERS: dict[str, Any] = {
    "summary": "Lists the current user's orders by status and date range.",
    "description": (
        "Lists the current user's orders with the given status placed between start_date and "
        "end_date (both inclusive), oldest first, at most `limit` (1 to 100). The range may "
        "span at most 90 days: for a longer period make several calls. Returns order id, "
        "status, amount in cents, currency and date. Only the current user's orders are ever "
        "searched. Do not use it to look up one order whose id you know (use get_order)."
    ),
    "parameters": _object({
        "status": {
            "type": "string",
            "enum": ["pending", "paid", "cancelled", "all"],
            "description": "Only orders in this status; `all` for any status.",
        },
        "start_date": {
            "type": "string",
            "pattern": DATE_PATTERN,
            "description": "First day of the range, YYYY-MM-DD, inclusive.",
        },
        "end_date": {
            "type": "string",
            "pattern": DATE_PATTERN,
            "description": "Last day of the range, YYYY-MM-DD, inclusive; not before start_date.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "description": "Most orders to return, 1 to 100; use 20 unless the user needs more.",
        },
    }),
    "side_effect": "readonly",
    "executor": "python",
    "executor_config": {"callable": "demo_shop.search_orders"},
    "context_bindings": _BIND_USER,
    "normalizers": {"status": ["trim", "lower"], "start_date": ["date"], "end_date": ["date"]},
    "rules": [
        {
            "type": "date_order", "start": "start_date", "end": "end_date",
            "hint": "end_date is before start_date: swap the two dates and call again.",
        },
        {
            "type": "max_span", "start": "start_date", "end": "end_date", "max_days": 90,
            "hint": "The range is longer than 90 days: split it into several calls of at most "
            "90 days each.",
        },
    ],
    "empty_meaning": (
        "No order matches these filters. This does not mean the user has no orders: another "
        "status or date range may find some."
    ),
    "max_chars": 4000,
    "timeout_s": 5.0,
}

GET_ORDER: dict[str, Any] = {
    **_ONE_ORDER,
    "summary": "One order of the current user by id.",
    "description": (
        "Shows one of the current user's orders by its id (ORD- and six digits): status, "
        "amount in cents, currency and date. An id that is not the current user's answers "
        "not_found. Do not use it to browse orders (use search_orders) or to change one."
    ),
    "parameters": _object({"order_id": _ORDER_ID}),
    "side_effect": "readonly",
    "executor": "python",
    "executor_config": {"callable": "demo_shop.get_order"},
    "timeout_s": 5.0,
}

CANCEL_ORDER: dict[str, Any] = {
    **_ONE_ORDER,
    "summary": "Cancels a pending or paid order of the current user.",
    "description": (
        "Cancels one of the current user's orders that is pending or paid, recording why. "
        "It cannot be undone; an order already cancelled answers business_rule. Cancelling "
        "does not refund a paid order: use refund_payment for the money. Only when the user "
        "asked for it (or fraud is suspected); never to correct a search result."
    ),
    "parameters": _object({
        "order_id": _ORDER_ID,
        "reason": {
            "type": "string",
            "enum": ["customer_request", "duplicate", "fraud_suspected", "other"],
            "description": "Why the order is cancelled: customer_request when the user asked.",
        },
    }),
    "side_effect": "write",
    "executor": "python",
    "executor_config": {"callable": "demo_shop.cancel_order", "reconcile": "demo_shop.cancel_order"},
    "timeout_s": 5.0,
}

REFUND_PAYMENT: dict[str, Any] = {
    **_ONE_ORDER,
    "summary": "Refunds money of an order through the payments provider.",
    "description": (
        "Refunds amount_cents of one of the current user's orders to their payment method, "
        "through the payments provider. The amount is in cents (1250 = 12.50) and at most what "
        "is left to refund of the order (its amount less earlier refunds): more is refused at "
        "once, saying how much is left. Look the order up first. Each call is a new refund: "
        "never call it again after a timeout or an unknown outcome, the outcome is being "
        "checked. A refund above 45000 cents waits for an operator's approval: tell the user "
        "it is pending. Does not cancel the order (use cancel_order)."
    ),
    "parameters": _object({
        "order_id": _ORDER_ID,
        "amount_cents": {
            "type": "integer",
            "minimum": 1,
            "description": "Amount to refund in cents, at least 1 and at most what is left to refund "
            "of the order.",
        },
    }),
    "side_effect": "write",
    "executor": "http",
    "executor_config": {
        "url_setting": "TOOLHUB_DEMO_PAYMENTS_URL",
        "path": "/refunds",
        "status_path": "/refunds",
        "secret_ref": "DEMO_PAYMENTS_API_KEY",
    },
    # Checked before the approval: an amount past what is left is refused at once, not queued
    # for an operator who could only reject it.
    "rules": [{"type": "state_limit", "field": "amount_cents", "reader": "demo_shop.refundable_cents"}],
    "approval": {"field": "amount_cents", "above": REFUND_APPROVAL_ABOVE_CENTS},
    "timeout_s": 3.0,
}

# Code mode: the code calls the tools beside it in the toolset and phase, each call governed
# like the model's own (apps/gateway/code_runs.py); the exports list them in the description.
RUN_PYTHON: dict[str, Any] = {
    "summary": "Runs Python code that calls the tools beside it, for work of many calls.",
    "description": (
        "Runs Python code that calls your tools, for work that takes many calls or combines "
        "their results: totals and counts over many orders, a longer period than one call "
        "allows, the same action on several items. Do not use it for one or two calls: call "
        "the tools directly. Every call the code makes is checked like yours (the user's own "
        "data only, the same limits and approvals). The code runs isolated: no network, no "
        "files but an empty working directory, the standard library only; at most 30 s "
        "(10 s of CPU), 256 MB, 100 tool calls and 64 KB printed."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "minLength": 1,
                "maxLength": 20000,
                "description": "Python 3 code. `tools.<name>(...)` calls a tool; assign the answer "
                "to `result`.",
            }
        },
        "required": ["code"],
        "additionalProperties": False,
    },
    # What a run may do depends on the tools beside it; the exports say it per phase.
    "side_effect": "write",
    "executor": "sandbox",
    "executor_config": {},
    "mode": "async",
    "timeout_s": 35.0,
    "max_chars": 8000,
}

DEMO_TOOLS: dict[str, dict[str, Any]] = {
    "search_orders": SEARCH_ORDERS,
    "get_order": GET_ORDER,
    "cancel_order": CANCEL_ORDER,
    "refund_payment": REFUND_PAYMENT,
    "run_python": RUN_PYTHON,
}
SUPPORT_TOOLSET = "support"
# The demo shipping MCP server's tools (seed_shipping.py) are in the toolset too.
SUPPORT_PHASES: dict[str, list[str]] = {
    "lookup": ["search_orders", "get_order", "track_shipment"],
    "resolve": ["search_orders", "get_order", "cancel_order", "refund_payment", "track_shipment",
                "pickup_status", "schedule_pickup", "run_python"],
}
