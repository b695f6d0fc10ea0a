"""POST /api/v1/invoke/batch: one model turn, results in order, reads together, writes in turn."""

from __future__ import annotations

import json

import pytest

from apps.gateway.envelopes import json_size
from apps.gateway.replies import MIN_ALLOWANCE_CHARS, allot_budget
from tests.gateway.callables import TIMELINE

TIMED_SCHEMA = {
    "type": "object",
    "properties": {
        "sleep_ms": {"type": "integer"}, "count": {"type": "integer"}, "meet": {"type": "integer"},
    },
    "required": ["sleep_ms", "count"],
    "additionalProperties": False,
}


@pytest.fixture
def timed_tools(publish_tool):
    common = {
        "parameters": TIMED_SCHEMA,
        "context_bindings": {},
        "executor_config": {"callable": "tests.timed"},
    }
    publish_tool("read_slowly", **common)
    publish_tool("write_slowly", side_effect="write", **common)


def batch(api, calls, **extra):
    body = {
        "task_id": "t-batch",
        "calls": [
            {"id": call_id, "name": name, "arguments": json.dumps(args)} for call_id, name, args in calls
        ],
        **extra,
    }
    return api.post("/api/v1/invoke/batch", body, format="json")


def overlapping(a: str, b: str) -> bool:
    """Each of the two calls started before the other ended."""
    at = {event: i for i, event in enumerate(TIMELINE)}
    return at["start", a] < at["end", b] and at["start", b] < at["end", a]


@pytest.mark.django_db(transaction=True)
def test_reads_run_concurrently_and_writes_one_at_a_time_in_order(api, timed_tools):
    calls = [
        ("w1", "write_slowly", {"sleep_ms": 150, "count": 1}),
        ("r1", "read_slowly", {"sleep_ms": 50, "count": 1, "meet": 3}),
        ("w2", "write_slowly", {"sleep_ms": 150, "count": 1}),
        ("r2", "read_slowly", {"sleep_ms": 50, "count": 1, "meet": 3}),
        ("r3", "read_slowly", {"sleep_ms": 50, "count": 1, "meet": 3}),
    ]

    response = batch(api, calls)

    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["call_id"] for r in results] == ["w1", "r1", "w2", "r2", "r3"]
    assert all(r["status"] == "ok" for r in results)
    assert overlapping("r1", "r2") and overlapping("r2", "r3")
    assert not overlapping("w1", "w2")
    assert TIMELINE.index(("end", "w1")) < TIMELINE.index(("start", "w2"))


@pytest.mark.django_db
def test_one_bad_call_does_not_stop_the_others(api, timed_tools):
    calls = [
        ("a", "read_slowly", {"sleep_ms": 1, "count": 1}),
        ("b", "no_such_tool", {}),
        ("c", "read_slowly", {"sleep_ms": "soon", "count": 1}),
    ]

    results = batch(api, calls).json()["results"]

    assert [(r["call_id"], r["status"], r.get("kind")) for r in results] == [
        ("a", "ok", None),
        ("b", "error", "unknown_tool"),
        ("c", "error", "invalid_args"),
    ]


@pytest.mark.django_db
def test_the_budget_is_shared_truncating_large_results_and_dropping_none(api, timed_tools):
    calls = [
        ("small", "read_slowly", {"sleep_ms": 1, "count": 3}),
        ("big1", "read_slowly", {"sleep_ms": 1, "count": 3000}),
        ("big2", "read_slowly", {"sleep_ms": 1, "count": 3000}),
    ]

    results = batch(api, calls, budget_chars=3000).json()["results"]

    assert [r["status"] for r in results] == ["ok", "ok", "ok"]
    assert results[0]["truncated"] is None and results[0]["data"]["items"] == [0, 1, 2]
    assert sum(json_size(r["data"]) for r in results) <= 3000
    assert results[1]["truncated"] and results[2]["truncated"]


@pytest.mark.django_db
def test_repeated_call_ids_in_one_batch_are_refused(api, timed_tools):
    response = batch(api, [("a", "read_slowly", {}), ("a", "read_slowly", {})])

    assert response.status_code == 400
    assert "repeated: a" in response.json()["details"][0]["problem"]


def test_small_results_keep_what_they_need_and_large_ones_share_the_rest():
    assert allot_budget([100, 5000, 5000], 3000) == [100, 1450, 1450]
    assert allot_budget([0, 800], 1000) == [0, 800]
    assert allot_budget([9000, 9000], 100) == [MIN_ALLOWANCE_CHARS, MIN_ALLOWANCE_CHARS]
