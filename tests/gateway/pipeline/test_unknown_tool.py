from apps.gateway.pipeline.unknown_tool import ToolPlace, unknown_tool_error

from .conftest import assert_actionable

VISIBLE = [
    ("search_orders", "Search the current user's orders by status and date range."),
    ("get_order", "One order of the current user by its number."),
    ("refund_payment", "Refund a captured payment, fully or in part. Needs an invoice number."),
    ("list_invoices", "The current user's invoices."),
    ("request_capability", "Tell the operators about a capability you need but do not have."),
]


def test_a_misspelt_name_suggests_the_closest_tools_and_the_way_out():
    error = unknown_tool_error("serch_orders", VISIBLE)

    envelope = assert_actionable(error, kind="unknown_tool", recoverable=True)
    assert error.message == 'The tool "serch_orders" is not available here.'
    assert envelope["suggestions"][0] == "search_orders"
    assert "request_capability" in error.hint
    assert "search_orders" in error.hint


def test_words_shared_with_a_description_count():
    error = unknown_tool_error("find_invoice_for_refund", VISIBLE)

    assert set(error.extra["suggestions"]) == {"refund_payment", "list_invoices"}


def test_at_most_three_suggestions_and_never_request_capability():
    error = unknown_tool_error("order_user_current", VISIBLE)

    assert 0 < len(error.extra["suggestions"]) <= 3
    assert "request_capability" not in error.extra["suggestions"]


def test_without_a_close_tool_the_hint_still_leads_to_request_capability():
    error = unknown_tool_error("launch_rocket", VISIBLE)

    assert error.extra["suggestions"] == []
    assert "call request_capability" in error.hint


def test_a_huge_name_is_not_echoed():
    error = unknown_tool_error("x" * 10_000, VISIBLE)

    assert len(error.message) < 120


def test_a_tool_of_another_phase_is_named_with_the_phase_that_offers_it():
    error = unknown_tool_error(
        "refund_payment", VISIBLE[:2], elsewhere=[ToolPlace("support", "resolve"), ToolPlace("billing", "")]
    )

    envelope = assert_actionable(error, kind="unknown_tool", recoverable=True)
    assert error.hint.startswith(
        "refund_payment is available in phase resolve of toolset support or toolset billing;"
    )
    assert '"toolset": "support", "phase": "resolve"' in error.hint
    assert envelope["available_in"] == [
        {"toolset": "support", "phase": "resolve"},
        {"toolset": "billing", "phase": None},
    ]


def test_a_tool_nowhere_else_has_no_place_in_the_envelope():
    assert "available_in" not in unknown_tool_error("launch_rocket", VISIBLE).extra
