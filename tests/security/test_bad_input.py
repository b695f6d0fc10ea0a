"""Bad input on every POST endpoint of the agent API and on /mcp: a clear refusal, never a 500,
nothing executed, and the process still serving."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings

from apps.common.errors import ERROR_KINDS
from apps.common.parsers import MAX_BODY_DEPTH
from apps.gateway.pipeline.parse import MAX_DEPTH
from apps.ledger.models import LedgerEntry
from tests.gateway.callables import RUNS

from .routes import agent_api_routes

pytestmark = pytest.mark.django_db

# How each POST endpoint carries a tool's arguments (for /sessions: the session attributes).
CARRIERS: dict[str, Callable[[Any], Any]] = {
    "/api/v1/invoke": lambda args: {
        "task_id": "t-1", "call": {"id": "call_1", "name": "writer", "arguments": args},
    },
    "/api/v1/invoke/batch": lambda args: {
        "task_id": "t-1", "calls": [{"id": "call_1", "name": "writer", "arguments": args}],
    },
    "/api/v1/adapters/openai": lambda args: {
        "task_id": "t-1",
        "message": {"role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "writer", "arguments": args}},
        ]},
    },
    "/api/v1/adapters/anthropic": lambda args: {
        "task_id": "t-1",
        "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "call_1", "name": "writer", "input": args},
        ]},
    },
    "/api/v1/sessions": lambda args: {"subject": "u-1", "attributes": args},
    "/mcp": lambda args: {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "writer", "arguments": args},
    },
}
TOOL_CARRIERS = [path for path in CARRIERS if path != "/api/v1/sessions"]


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


LIMIT = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
JSON = "application/json"
BODIES: dict[str, tuple[bytes, str]] = {
    "not JSON": (b"task_id=t-1&call=writer", "application/x-www-form-urlencoded"),
    "plain text": (b"hello", "text/plain"),
    "broken JSON": (b'{"task_id": "t-1", "call": ', "application/json"),
    "invalid UTF-8": (b'{"task_id": "t-\xff\xfe", "subject": "\xc3\x28"}', "application/json"),
    "a raw NUL byte": (b'{"task_id": "t-\x00", "subject": "u-\x00"}', "application/json"),
    "empty": (b"", "application/json"),
    "JSON null": (b"null", "application/json"),
    "nested 10000 levels": (b"[" * 10_000 + b"]" * 10_000, "application/json"),
    f"nested {MAX_BODY_DEPTH + 1} levels": (json.dumps(_nested(MAX_BODY_DEPTH + 1)).encode(), JSON),
    "an enormous array": (json.dumps([{}] * 100_000).encode(), "application/json"),
    "over the size limit": (json.dumps({"task_id": "x" * LIMIT}).encode(), "application/json"),
}
ARGUMENTS: dict[str, Any] = {
    "10 MB of arguments": {"query": "x" * 10_000_000},
    "nested deeper than the body limit": _nested(MAX_BODY_DEPTH + 1),
    "an enormous array": {"query": list(range(150_000))},
    "a NUL in a value": {"query": "a\u0000b"},
    "a NUL in a key": {"qu\u0000ery": "ab"},
}


def refusal(path: str, response) -> dict[str, Any]:
    """The error the caller got, checked for shape: an error envelope (for /mcp a JSON-RPC error
    or an isError result), never a 5xx, never a success."""
    assert response.status_code < 500, response.content[:500]
    body = response.json()
    if path.startswith("/mcp"):
        if "error" in body:
            assert body["error"]["message"]
            return body["error"]
        assert body["result"]["isError"] is True
        return body["result"]["structuredContent"]
    if response.status_code >= 400:
        envelope = body
    elif path == "/api/v1/invoke":
        envelope = body
    elif path == "/api/v1/invoke/batch":
        envelope = body["results"][0]
    elif path == "/api/v1/adapters/openai":
        envelope = json.loads(body["messages"][0]["content"])
    elif path == "/api/v1/adapters/anthropic":
        assert body["content"][0]["is_error"] is True
        envelope = json.loads(body["content"][0]["content"])
    else:
        raise AssertionError(f"{path} accepted it: {response.status_code} {body}")
    assert envelope["status"] == "error" and envelope["kind"] in ERROR_KINDS
    assert envelope["message"] and envelope["hint"]
    return envelope


def assert_nothing_ran_and_still_serving(client) -> None:
    assert not RUNS, f"an executor ran: {dict(RUNS)}"
    assert not LedgerEntry.objects.exists()
    assert client.get("/healthz").json() == {"status": "ok"}


def test_every_post_endpoint_of_the_agent_api_is_exercised_here():
    posting = {f"/{route.path}" for route in agent_api_routes() if route.accepts_post}

    assert posting | {"/mcp"} == set(CARRIERS), "add the new endpoint to CARRIERS"


@pytest.mark.parametrize("body", BODIES)
def test_a_bad_body_is_refused_with_a_clear_error(caller, recording_tools, body):
    raw, content_type = BODIES[body]

    for path in CARRIERS:
        response = caller.post(path, raw, content_type=content_type)

        error = refusal(path, response)
        assert 400 <= response.status_code < 500, path
        if body == "over the size limit":
            assert response.status_code == 413, path
            assert "larger than this server accepts" in error["message"]
        assert_nothing_ran_and_still_serving(caller.client)


@pytest.mark.parametrize("arguments", ARGUMENTS)
def test_bad_arguments_are_refused_with_a_clear_error(caller, recording_tools, arguments):
    for path in CARRIERS:
        response = caller.post_json(path, CARRIERS[path](ARGUMENTS[arguments]))

        error = refusal(path, response)
        if arguments == "10 MB of arguments":
            assert response.status_code == 413, path
        if arguments.startswith("a NUL") and path in TOOL_CARRIERS:
            assert error["kind"] == "invalid_args" and "NUL" in error["message"], path
            assert error["details"][0]["path"] == "/query", path
        assert_nothing_ran_and_still_serving(caller.client)


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, MAX_BODY_DEPTH - 8])
def test_arguments_nested_deeper_than_their_limit_are_invalid_args(caller, recording_tools, levels):
    for path in TOOL_CARRIERS:
        response = caller.post_json(path, CARRIERS[path]({"query": _nested(levels)}))

        error = refusal(path, response)
        assert error["kind"] == "invalid_args", path
        assert f"deeper than {MAX_DEPTH} levels" in error["message"], path
        assert_nothing_ran_and_still_serving(caller.client)


def test_mcp_ids_and_tool_names_with_nul_are_refused(caller, recording_tools):
    nul_id = {**CARRIERS["/mcp"]({"query": "a"}), "id": "call\u0000one"}
    nul_name = CARRIERS["/mcp"]({"query": "a"})
    nul_name["params"]["name"] = "wri\u0000ter"

    for body in (nul_id, nul_name):
        error = refusal("/mcp", caller.post_json("/mcp", body))
        assert "NUL" in error["message"]
    assert_nothing_ran_and_still_serving(caller.client)


def test_a_url_the_api_does_not_have_answers_an_error_envelope(caller):
    for path in ("/api/v1/invok", "/api/v1/executions/not-a-uuid", "/api/v2/invoke"):
        response = caller.client.get(path, **caller.headers())

        assert response.status_code == 404 and response["Content-Type"] == "application/json"
        assert response.json()["kind"] == "not_found"
    assert "text/html" in caller.client.get("/nowhere")["Content-Type"]
