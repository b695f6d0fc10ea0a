"""The invoke operations' lean path (apps/gateway/api/lean.py) answers as the DRF views do.

`?format=json` sends a request the DRF way (the lean path leaves DRF's format override to
DRF), so the same request can be answered both ways and the answers compared.
"""

from __future__ import annotations

import json

import pytest
from django.db import OperationalError

from apps.gateway.api.serializers import BatchInputSerializer, InvokeInputSerializer

pytestmark = pytest.mark.django_db

# Headers that differ between any two answers.
_PER_RESPONSE = {"X-Request-ID"}


@pytest.fixture
def serializer_reads(monkeypatch) -> list[str]:
    """The names of the input serializers that read a request, in order."""
    reads: list[str] = []
    for serializer in (InvokeInputSerializer, BatchInputSerializer):
        original = serializer.is_valid

        def spied(self, *, _original=original, **kwargs):
            reads.append(type(self).__name__)
            return _original(self, **kwargs)

        monkeypatch.setattr(serializer, "is_valid", spied)
    return reads


@pytest.fixture
def both_ways(api, serializer_reads):
    """Send a request the lean way, then (in another task) the DRF way: both answers."""

    def send(path: str, body: dict, **headers) -> tuple:
        lean = api.post(path, json.dumps(body), content_type="application/json", **headers)
        assert serializer_reads == [], "the lean path left a well-formed request to DRF"
        task = body["task_id"]
        # Another task, so that the two calls are not one call repeated; padded alike.
        body = {**body, "task_id": task.rstrip() + "-drf" + task[len(task.rstrip()):]}
        drf = api.post(f"{path}?format=json", json.dumps(body), content_type="application/json", **headers)
        assert len(serializer_reads) == 1
        return lean, drf

    return send


def _same_answer(lean, drf) -> None:
    assert (lean.status_code, lean.content) == (drf.status_code, drf.content)
    assert {k: v for k, v in lean.headers.items() if k not in _PER_RESPONSE} == {
        k: v for k, v in drf.headers.items() if k not in _PER_RESPONSE
    }


@pytest.mark.parametrize(
    "call",
    [
        {"id": "  c-1 ", "name": "lookup", "arguments": '{"query": "shoes \\u2028 and \\u00e9"}'},
        {"id": "c-1", "name": "lookup", "arguments": {"query": "an object, not text"}},
        {"id": "c-1", "name": "lookup", "arguments": '{"query": 3}'},
        {"id": "c-1", "name": "lookup"},
        {"id": "c-1", "name": "lookup", "arguments": None},
        {"id": "c-1", "name": "no_such_tool", "arguments": "{}"},
    ],
)
def test_a_well_formed_invoke_is_answered_byte_for_byte_as_drf_answers_it(
    both_ways, publish_tool, session_for, call
):
    publish_tool("lookup")
    session = {"HTTP_X_TOOLHUB_SESSION": session_for("u-1")}

    lean, drf = both_ways("/api/v1/invoke", {"task_id": " t-1 ", "toolset": "", "call": call}, **session)

    _same_answer(lean, drf)


def test_a_dry_run_and_a_batch_are_answered_as_drf_answers_them(both_ways, serializer_reads, publish_tool,
                                                                session_for):
    publish_tool("lookup")
    session = {"HTTP_X_TOOLHUB_SESSION": session_for("u-1")}
    calls = [{"id": f"c-{i}", "name": "lookup", "arguments": '{"query": "x"}'} for i in range(3)]

    dry = both_ways("/api/v1/invoke", {"task_id": "t", "dry_run": True, "call": calls[0]}, **session)
    serializer_reads.clear()
    batch_body = {"task_id": "t", "calls": calls, "budget_chars": 600}
    batch = both_ways("/api/v1/invoke/batch", batch_body, **session)

    _same_answer(*dry)
    _same_answer(*batch)
    assert dry[0].json()["data"]["would_run"]["arguments"] == {"query": "x", "user_id": "u-1"}


def test_a_database_outage_during_the_call_is_answered_as_drf_answers_it(
    both_ways, publish_tool, monkeypatch
):
    publish_tool("lookup")

    def unreachable(**kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr("apps.gateway.services.prepare_call", unreachable)
    body = {"task_id": "t", "call": {"id": "c", "name": "lookup", "arguments": "{}"}}

    lean, drf = both_ways("/api/v1/invoke", body)

    _same_answer(lean, drf)
    assert lean.status_code == 503 and lean["Retry-After"] == "5"
    assert lean.json()["kind"] == "unavailable"


@pytest.mark.parametrize(
    "field",
    [
        {"task_id": 12345},  # DRF's CharField takes a number as its text
        {"dry_run": "true"},  # and its BooleanField the word
        {"wait_s": "0"},  # and its FloatField a number in a string
    ],
)
def test_a_value_the_serializers_convert_is_read_the_drf_way(api, serializer_reads, publish_tool, session_for,
                                                            field):
    publish_tool("lookup")
    body = {"task_id": "t", "call": {"id": "c", "name": "lookup", "arguments": '{"query": "x"}'}, **field}

    response = api.post("/api/v1/invoke", body, format="json", HTTP_X_TOOLHUB_SESSION=session_for("u-1"))

    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert serializer_reads == ["InvokeInputSerializer"]


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"task_id": " ", "call": {"id": "c", "name": "x"}}, "/task_id"),
        ({"task_id": "t" * 201, "call": {"id": "c", "name": "x"}}, "/task_id"),
        ({"task_id": "t", "call": {"id": "c\u0000", "name": "x"}}, "/call/id"),
        ({"task_id": "t", "call": {"id": "c", "name": "x"}, "wait_s": 61}, "/wait_s"),
        ({"task_id": "t", "call": {"id": "c", "name": "x"}, "toolset": None}, "/toolset"),
        ({"task_id": "t", "call": "c"}, "/call"),
    ],
)
def test_a_field_the_serializers_refuse_is_refused_naming_it(api, body, path):
    response = api.post("/api/v1/invoke", body, format="json")

    assert response.status_code == 400
    assert response.json()["kind"] == "invalid_args"
    assert path in {d["path"] for d in response.json()["details"]}


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"task_id": "t", "calls": []}, "/calls"),
        ({"task_id": "t", "calls": [{"id": "a", "name": "x"}, {"id": " a", "name": "y"}]}, "/calls"),
        ({"task_id": "t", "calls": [{"id": "a", "name": "x"}], "budget_chars": 499}, "/budget_chars"),
        ({"task_id": "t", "calls": [{"id": "a", "name": "x"}], "budget_chars": True}, "/budget_chars"),
    ],
)
def test_a_batch_field_the_serializers_refuse_is_refused_naming_it(api, body, path):
    response = api.post("/api/v1/invoke/batch", body, format="json")

    assert response.status_code == 400
    assert path in {d["path"] for d in response.json()["details"]}
