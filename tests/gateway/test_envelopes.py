import json
import random
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from apps.catalog.models import DEFAULT_EMPTY_MEANING
from apps.gateway.envelopes import (
    MIN_LIMIT_CHARS,
    accepted_envelope,
    empty_envelope,
    is_empty,
    json_size,
    ok_envelope,
    pending_approval_envelope,
    result_envelope,
    shape_result,
)

from .pipeline.conftest import make_version

STATUSES = ["paid", "pending", "cancelled"]


@pytest.fixture
def version():
    return make_version()


def _orders(count: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    return [
        {
            "id": 1000 + i,
            "status": STATUSES[i % 3],
            "amount_cents": rng.randint(100, 90_000),
            "customer": f"Customer «{rng.randint(1, 10_000)}»",
            "note": 'line\n"quoted"\t' * rng.randint(0, 3),
        }
        for i in range(count)
    ]


def _assert_fits(shaped, limit: int) -> None:
    """The data is plain JSON, as the API renders it, within the limit."""
    text = json.dumps(shaped.data, ensure_ascii=False, separators=(",", ":"))
    assert len(text) <= limit
    assert json.loads(text) == shaped.data


# --- empty results ---


@pytest.mark.parametrize(
    "result",
    [None, [], {}, "", "  \n", {"orders": [], "total": 0}, {"orders": [], "customers": {}, "page": 1}],
)
def test_results_without_items_are_empty_with_their_meaning(version, result):
    shaped = shape_result(result, version=version)

    envelope = result_envelope(call_id="call_1", version=version, shaped=shaped)

    assert envelope == {
        "status": "empty",
        "call_id": "call_1",
        "tool": "search_orders",
        "version": 3,
        "meaning": "No orders match these filters. This does not mean the user has no orders.",
        "raw": result,
    }


@pytest.mark.parametrize("result", [0, False, {"balance": 0}, [[]], {"orders": [], "customer": {"id": 1}}])
def test_results_with_something_in_them_are_not_empty(result):
    assert not is_empty(result)


def test_a_version_without_its_own_meaning_gets_the_default():
    envelope = empty_envelope(call_id="call_1", version=make_version(empty_meaning=""), raw=[])

    assert envelope["meaning"] == DEFAULT_EMPTY_MEANING


# --- the other envelopes ---


def test_a_result_that_fits_is_ok_and_whole(version):
    orders = _orders(3)

    shaped = shape_result(orders, version=version)
    envelope = result_envelope(call_id="call_1", version=version, shaped=shaped, execution_id="e-1")

    assert envelope == {
        "status": "ok",
        "call_id": "call_1",
        "tool": "search_orders",
        "version": 3,
        "data": orders,
        "cached": False,
        "truncated": None,
        "execution_id": "e-1",
    }


def test_ok_envelope_of_a_cached_replay(version):
    envelope = ok_envelope(call_id="call_1", version=version, data={"id": 1}, cached=True, execution_id=42)

    assert envelope["cached"] is True
    assert envelope["execution_id"] == "42"


def test_accepted_and_pending_approval_envelopes_point_at_the_execution():
    assert accepted_envelope(call_id="call_1", execution_id="e-9") == {
        "status": "accepted",
        "call_id": "call_1",
        "execution_id": "e-9",
        "poll": "/api/v1/executions/e-9",
    }
    assert pending_approval_envelope(call_id="call_2", execution_id="e-8", poll="/x") == {
        "status": "pending_approval",
        "call_id": "call_2",
        "execution_id": "e-8",
        "poll": "/x",
    }


# --- truncation ---


def test_a_long_list_keeps_a_summary_and_the_first_items_that_fit():
    version = make_version(max_chars=2000)
    orders = _orders(300)

    shaped = shape_result(orders, version=version)

    _assert_fits(shaped, 2000)
    shown = shaped.truncated["shown"]
    assert 0 < shown < 300
    assert shaped.data["items"] == orders[:shown]
    assert shaped.truncated["total"] == 300
    assert shaped.truncated["note"].startswith(f"Result truncated: showing {shown} of 300 items.")
    assert "Narrow the filters (status, start_date, end_date, limit)" in shaped.truncated["note"]
    summary = shaped.data["summary"]
    assert summary["total"] == 300
    assert summary["fields"]["status"] == {"paid": 100, "pending": 100, "cancelled": 100}
    amounts = [order["amount_cents"] for order in orders]
    assert summary["fields"]["amount_cents"] == {
        "min": min(amounts),
        "max": max(amounts),
        "sum": sum(amounts),
    }
    assert summary["fields"]["id"] == {"min": 1000, "max": 1299}
    assert "customer" not in summary["fields"]


def test_the_batch_budget_narrows_the_limit_but_never_widens_it():
    orders = _orders(300)

    narrowed = shape_result(orders, version=make_version(max_chars=8000), budget_chars=1000)
    widened = shape_result(orders, version=make_version(max_chars=1000), budget_chars=50_000)

    _assert_fits(narrowed, 1000)
    _assert_fits(widened, 1000)
    assert narrowed.truncated["shown"] == widened.truncated["shown"]


def test_a_big_list_inside_an_object_is_truncated_in_place():
    result = {"page": 1, "orders": _orders(300), "currency": "EUR"}

    shaped = shape_result(result, version=make_version(max_chars=1500))

    _assert_fits(shaped, 1500)
    assert list(shaped.data) == ["page", "orders", "currency"]
    assert shaped.data["currency"] == "EUR"
    assert shaped.data["orders"]["summary"]["total"] == 300
    assert shaped.truncated["note"].startswith(
        f"Result truncated: showing {shaped.truncated['shown']} of 300 items of orders."
    )


def test_a_long_text_is_cut_with_the_note():
    text = "A long report.\n" * 2000

    shaped = shape_result(text, version=make_version(max_chars=500))

    _assert_fits(shaped, 500)
    assert text.startswith(shaped.data)
    assert shaped.truncated["total"] == len(text)
    assert shaped.truncated["note"].startswith(
        f"Result truncated: showing {len(shaped.data)} of {len(text)} characters."
    )


def test_an_item_too_big_to_show_whole_is_shown_shortened():
    rows = [{"id": 1, "body": "z" * 5000}, {"id": 2, "body": "short"}]

    shaped = shape_result(rows, version=make_version(max_chars=400))

    _assert_fits(shaped, 400)
    (first,) = shaped.data["items"]
    assert first["id"] == 1 and "z" * 50 in first["body"]
    assert shaped.truncated["note"].startswith("Result truncated: showing 1 of 2 items, that one shortened.")


def test_values_the_api_can_render_are_measured_too():
    rows = [{"at": datetime(2026, 1, 1, tzinfo=UTC), "amount": Decimal("1.50")}] * 500

    shaped = shape_result(rows, version=make_version(max_chars=600))

    assert json_size(shaped.data) <= 600
    assert shaped.truncated["total"] == 500


SHAPES = {
    "orders": lambda n: _orders(n),
    "texts": lambda n: ['é"\\\n' * 40 for _ in range(n)],
    "one huge item": lambda n: [{"blob": "x" * (n * 100)}],
    "object with a list": lambda n: {"total": n, "rows": _orders(n), "next": None},
    "object with a nested list": lambda n: {"data": {"orders": _orders(n), "cursor": "c" * 50}},
    "object of big fields": lambda n: {f"field_{i}": "y" * 300 for i in range(n)},
    "text": lambda n: 'ü"\n' * (n * 50),
    "numbers": lambda n: list(range(n * 50)),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("limit", [MIN_LIMIT_CHARS, 137, 256, 700, 1999, 4096])
@pytest.mark.parametrize("count", [1, 5, 80, 600])
def test_shaped_data_is_always_valid_json_within_the_limit(shape, limit, count):
    result = SHAPES[shape](count)

    shaped = shape_result(result, version=make_version(max_chars=8000), budget_chars=limit)

    _assert_fits(shaped, limit)
    if json_size(result) <= limit:
        assert shaped.truncated is None and shaped.data == result
    else:
        assert shaped.truncated["note"].startswith(
            f"Result truncated: showing {shaped.truncated['shown']} of {shaped.truncated['total']} "
        )
        shortened = "shortened" in shaped.truncated["note"]
        assert shaped.truncated["shown"] < shaped.truncated["total"] or shortened


def test_a_budget_below_the_floor_is_raised_to_it():
    shaped = shape_result(_orders(50), version=make_version(), budget_chars=10)

    _assert_fits(shaped, MIN_LIMIT_CHARS)
    assert shaped.data["summary"]["total"] == 50
