"""The hostile corpus (tests/fuzz/hostile.py) against every endpoint that takes a body.

What a caller can rely on, whatever it sends: never a 5xx; every answer is JSON a strict
UTF-8 reader can read; every non-2xx answer is an error envelope (on /mcp a JSON-RPC error
or a result with isError); a hostile call in a batch fails alone, its neighbours answer as
usual; and the invocation log keeps the refused call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_types import INVALID_PARAMS

from apps.audit.models import Invocation
from apps.common.errors import ERROR_KINDS
from tests.gateway.callables import RUNS
from tests.security.conftest import Caller
from tests.security.test_bad_input import assert_nothing_ran_and_still_serving

from .hostile import ARGUMENTS, BODIES, ENVELOPES, GOOD_ARGUMENTS, HUGE_INTEGER, VALUES, embed

pytestmark = pytest.mark.django_db

TOOL_ENDPOINTS = [path for path in ENVELOPES if path != "/api/v1/sessions"]
STATUSES = {"ok", "empty", "error", "accepted", "pending_approval"}


def assert_envelope(envelope: dict[str, Any]) -> None:
    assert envelope["status"] in STATUSES, envelope
    if envelope["status"] == "error":
        assert envelope["kind"] in ERROR_KINDS, envelope
        assert isinstance(envelope["recoverable"], bool), envelope
        assert envelope["message"] and envelope["hint"], envelope
        assert "int_max_str_digits" not in envelope["message"] + envelope["hint"], envelope


def envelopes(path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The envelopes of a 2xx answer, in the calls' order."""
    if path == "/api/v1/invoke":
        return [body]
    if path == "/api/v1/invoke/batch":
        return body["results"]
    if path == "/api/v1/adapters/openai":
        return [json.loads(message["content"]) for message in body["messages"]]
    if path == "/api/v1/adapters/anthropic":
        return [json.loads(block["content"]) for block in body["content"]]
    if path == "/mcp":
        return [body["result"]["structuredContent"]] if "structuredContent" in body.get("result", {}) else []
    return []


def answer(path: str, response) -> dict[str, Any]:
    """The answer's body, checked against the contract whatever the request was."""
    assert response.status_code < 500, (path, response.status_code, response.content[:300])
    if response.status_code == 202 and path == "/mcp":
        return {}
    body = json.loads(response.content.decode("utf-8"))
    if path == "/mcp":
        assert body["jsonrpc"] == "2.0" and ("error" in body) != ("result" in body), body
        if "error" in body:
            assert isinstance(body["error"]["code"], int) and body["error"]["message"], body
    elif response.status_code >= 300:
        assert body["status"] == "error" and body["call_id"] is None, body
        assert_envelope(body)
        return body
    for envelope in envelopes(path, body):
        assert_envelope(envelope)
    return body


def refused_whole(path: str, response) -> None:
    body = answer(path, response)
    assert 400 <= response.status_code < 500, (path, response.status_code, body)


@pytest.mark.parametrize("name", BODIES)
def test_a_hostile_body_is_refused_with_an_error_envelope(caller: Caller, recording_tools, name):
    for path in ENVELOPES:
        response = caller.post(path, BODIES[name])

        refused_whole(path, response)
        assert_nothing_ran_and_still_serving(caller.client)


@pytest.mark.parametrize("name", VALUES)
def test_a_hostile_value_anywhere_in_a_request_envelope_never_answers_500(
    caller: Caller, recording_tools, name
):
    for path, (template, places) in ENVELOPES.items():
        for place in places:
            response = caller.post(path, embed(template, place, VALUES[name]))

            answer(path, response)
    assert caller.client.get("/healthz").json() == {"status": "ok"}


def _calls(path: str, hostile: Any) -> dict[str, Any]:
    """A model turn of three calls to `finder`, the second carrying `hostile` arguments."""
    arguments = [GOOD_ARGUMENTS, hostile, GOOD_ARGUMENTS]
    ids = ["call_1", "call_2", "call_3"]
    if path == "/api/v1/invoke/batch":
        return {"task_id": "t-1", "calls": [
            {"id": i, "name": "finder", "arguments": a} for i, a in zip(ids, arguments, strict=True)
        ]}
    if path == "/api/v1/adapters/openai":
        return {"task_id": "t-1", "message": {"role": "assistant", "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "finder", "arguments": a}}
            for i, a in zip(ids, arguments, strict=True)
        ]}}
    if path == "/api/v1/adapters/anthropic":
        return {"task_id": "t-1", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": i, "name": "finder", "input": a}
            for i, a in zip(ids, arguments, strict=True)
        ]}}
    if path == "/api/v1/invoke":
        return {"task_id": "t-1", "call": {"id": "call_2", "name": "finder", "arguments": hostile}}
    return {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "finder", "arguments": hostile},
    }


_PLACE_OF_HOSTILE = {
    "/api/v1/invoke/batch": ("calls", 1, "arguments"),
    "/api/v1/adapters/openai": ("message", "tool_calls", 1, "function", "arguments"),
    "/api/v1/adapters/anthropic": ("message", "content", 1, "input"),
    "/api/v1/invoke": ("call", "arguments"),
    "/mcp": ("params", "arguments"),
}
_TAKES_TEXT = {"/api/v1/invoke", "/api/v1/invoke/batch", "/api/v1/adapters/openai"}


@pytest.mark.parametrize("form", ["as JSON text", "as an object"])
@pytest.mark.parametrize("name", ARGUMENTS)
def test_hostile_arguments_fail_their_own_call_and_no_other(caller: Caller, recording_tools, name, form):
    hostile = ARGUMENTS[name]
    for path in TOOL_ENDPOINTS:
        if form == "as JSON text" and path not in _TAKES_TEXT:
            continue
        RUNS.clear()
        Invocation.objects.all().delete()
        template = _calls(path, "placeholder")
        text = json.dumps(hostile.text) if form == "as JSON text" else hostile.text
        response = caller.post(path, embed(template, _PLACE_OF_HOSTILE[path], text))

        if form == "as an object" and (
            not hostile.fits_a_body or (path == "/api/v1/adapters/anthropic" and not hostile.is_object)
        ):
            # A body nested past its limit, or an input block that is no object, is a malformed
            # request: refused as a whole, before anything runs.
            refused_whole(path, response)
            assert not RUNS
            continue
        body = answer(path, response)
        assert response.status_code == 200, (path, body)
        if path == "/mcp" and "error" in body:
            # Arguments that are no object do not fit tools/call's params: a JSON-RPC error.
            assert body["error"]["code"] == INVALID_PARAMS and not hostile.is_object, body
            assert not RUNS
            continue
        found = envelopes(path, body)
        hostile_envelope = found[1] if len(found) == 3 else found[0]
        if len(found) == 3:
            assert [found[0]["status"], found[2]["status"]] == ["ok", "ok"], (path, found)
        refused = hostile.refused and not (form == "as an object" and hostile.collapses_in_body)
        if refused:
            assert hostile_envelope.get("kind") in {"invalid_json", "invalid_args"}, (path, hostile_envelope)
            assert RUNS["tests.echo"] == len(found) - 1, path
        if path != "/mcp":
            assert Invocation.objects.filter(call_id="call_2").count() == 1, path
    assert caller.client.get("/healthz").json() == {"status": "ok"}


@pytest.mark.parametrize("form", ["as JSON text", "as an object"])
def test_a_huge_integer_is_invalid_args_naming_its_place(caller: Caller, recording_tools, form):
    hostile = f'{{"query": "a", "ids": [1, {HUGE_INTEGER}]}}'
    text = json.dumps(hostile) if form == "as JSON text" else hostile
    template = _calls("/api/v1/invoke/batch", "placeholder")

    response = caller.post("/api/v1/invoke/batch", embed(template, ("calls", 1, "arguments"), text))

    results = answer("/api/v1/invoke/batch", response)["results"]
    assert response.status_code == 200
    assert [r["status"] for r in results] == ["ok", "error", "ok"]
    error = results[1]
    assert error["kind"] == "invalid_args" and error["call_id"] == "call_2"
    assert "5000 digits" in error["message"] and "/ids/1" in error["message"]
    assert "as a string" in error["hint"]
    assert error["details"] == [{"path": "/ids/1", "problem": "an integer of 5000 digits"}]


@pytest.mark.parametrize("form", ["as JSON text", "as an object"])
def test_a_lone_surrogate_is_invalid_json_naming_its_place_not_a_number_problem(
    caller: Caller, recording_tools, form
):
    hostile = '{"query": "a\\ud800"}'
    text = json.dumps(hostile) if form == "as JSON text" else hostile
    template = _calls("/api/v1/invoke/batch", "placeholder")

    response = caller.post("/api/v1/invoke/batch", embed(template, ("calls", 1, "arguments"), text))

    results = answer("/api/v1/invoke/batch", response)["results"]
    assert [r["status"] for r in results] == ["ok", "error", "ok"]
    error = results[1]
    assert error["kind"] == "invalid_json"
    assert "surrogate" in error["message"] and "/query" in error["message"]
    assert "number" not in error["message"]
    assert error["details"][0]["path"] == "/query"


@pytest.mark.parametrize(
    "name", ["a huge integer", "an integer past 2**53", "a huge float", "a lone high surrogate", "a NUL"]
)
def test_session_attributes_no_tool_could_bind_are_refused(caller: Caller, name):
    # A tool binds attributes into its arguments, which are hashed, stored and echoed.
    template, _ = ENVELOPES["/api/v1/sessions"]

    response = caller.post("/api/v1/sessions", embed(template, ("attributes", "plan"), VALUES[name]))

    error = answer("/api/v1/sessions", response)
    assert response.status_code == 400
    assert error["details"][0]["path"] == "/attributes"
    assert "Attribute plan:" in error["details"][0]["problem"]
