"""Fixtures shared by the tests of what agents see: exports, adapters, MCP, capability requests.

`demo_tools` publishes the demo shop's order tools as the foundation issue defines them
(same names, schemas, bindings and toolset), run by the gateway tests' python executors so
these tests depend on neither the seed nor the demo's order book.
"""

from __future__ import annotations

from typing import Any

import pytest

from apps.catalog.models import Tool, Toolset, ToolsetPhase
from tests.gateway.conftest import agent, api, publish_tool, session_for  # noqa: F401

DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
BIND_USER = {"user_id": {"source": "session.subject", "policy": "must_match"}}
USER_ID = {
    "type": "string",
    "description": "The end user the call is for. Filled from the session by ToolHub.",
}
ORDER_ID = {
    "type": "string",
    "pattern": r"^ORD-\d{6}$",
    "description": "The order id as shown to the user: ORD- and six digits, e.g. ORD-000042.",
}

# The schema of search_orders exactly as the foundation issue fixes it (what the model fills).
SEARCH_ORDERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["pending", "paid", "cancelled", "all"]},
        "start_date": {"type": "string", "pattern": DATE_PATTERN},
        "end_date": {"type": "string", "pattern": DATE_PATTERN},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    },
    "required": ["status", "start_date", "end_date", "limit"],
    "additionalProperties": False,
}
SEARCH_ORDERS_DESCRIPTIONS = {
    "status": "Only orders in this status; `all` for any status.",
    "start_date": "First day of the range, YYYY-MM-DD, inclusive.",
    "end_date": "Last day of the range, YYYY-MM-DD, inclusive; not before start_date.",
    "limit": "Most orders to return, 1 to 100; use 20 unless the user needs more.",
}


def _bound_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"user_id": USER_ID, **properties},
        "required": ["user_id", *properties],
        "additionalProperties": False,
    }


SEARCH_ORDERS_PARAMETERS = _bound_object(
    {
        name: {**schema, "description": SEARCH_ORDERS_DESCRIPTIONS[name]}
        for name, schema in SEARCH_ORDERS_SCHEMA["properties"].items()
    }
)
GET_ORDER_PARAMETERS = _bound_object({"order_id": ORDER_ID})
CANCEL_ORDER_PARAMETERS = _bound_object(
    {
        "order_id": ORDER_ID,
        "reason": {
            "type": "string",
            "enum": ["customer_request", "duplicate", "fraud_suspected", "other"],
            "description": "Why the order is cancelled: customer_request when the user asked.",
        },
    }
)
REFUND_PAYMENT_PARAMETERS = _bound_object(
    {
        "order_id": ORDER_ID,
        "amount_cents": {
            "type": "integer",
            "minimum": 1,
            "description": "Amount to refund in cents, at least 1 and at most the order's amount.",
        },
    }
)

DEMO_TOOLS: dict[str, dict[str, Any]] = {
    "search_orders": {
        "description": "Lists the current user's orders with the given status placed between start_date "
        "and end_date (both inclusive), oldest first, at most `limit` (1 to 100). The range may span at "
        "most 90 days. Do not use it to look up one order whose id you know (use get_order).",
        "parameters": SEARCH_ORDERS_PARAMETERS,
    },
    "get_order": {
        "description": "Shows one of the current user's orders by its id (ORD- and six digits). Do not "
        "use it to browse orders (use search_orders) or to change one.",
        "parameters": GET_ORDER_PARAMETERS,
    },
    "cancel_order": {
        "description": "Cancels one of the current user's orders that is pending or paid. It cannot be "
        "undone. Only when the user asked for it.",
        "parameters": CANCEL_ORDER_PARAMETERS,
        "side_effect": "write",
    },
    "refund_payment": {
        "description": "Refunds amount_cents of one of the current user's orders. Never call it again "
        "after a timeout or an unknown outcome.",
        "parameters": REFUND_PAYMENT_PARAMETERS,
        "side_effect": "write",
    },
}
SUPPORT_PHASES = {
    "lookup": ["search_orders", "get_order"],
    "resolve": ["search_orders", "get_order", "cancel_order", "refund_payment"],
}


@pytest.fixture
def demo_tools(publish_tool):  # noqa: F811
    """The four demo tools, granted to the agent, and the `support` toolset with its phases."""
    for name, fields in DEMO_TOOLS.items():
        publish_tool(name, context_bindings=BIND_USER, **fields)
    toolset = Toolset.objects.create(name="support")
    toolset.tools.set(Tool.objects.filter(name__in=DEMO_TOOLS))
    for phase, names in SUPPORT_PHASES.items():
        ToolsetPhase.objects.create(toolset=toolset, name=phase).tools.set(
            Tool.objects.filter(name__in=names)
        )
    return DEMO_TOOLS
