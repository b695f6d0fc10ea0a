"""How an http version's arguments become a request, and the answer a result. Pure: no database,
no network (what arrives at a real upstream is tests/gateway/executors/http/test_http_executor.py)."""

from __future__ import annotations

import json

import pytest

from apps.common.errors import InvalidArgsError
from apps.gateway.executors.http.mapping import (
    RequestParts,
    ResponseShapeError,
    request_parts,
    selected_response,
    status_parts,
)

REFUNDS = {
    "url": "https://api.example.com",
    "method": "GET",
    "path": "/orders/{order_id}/refunds",
    "query": ["expand", "limit", "since"],
    "headers": {"X-Request-Channel": "channel"},
}


def test_a_get_fills_path_query_and_headers_and_sends_no_body():
    # when
    parts = request_parts(
        REFUNDS,
        {"order_id": "a/b c", "expand": ["items", "payments"], "limit": 20, "since": None, "channel": "web"},
        idempotency_key=None,
    )

    # then: the value is one segment; arrays repeat, null is left out, numbers are their JSON
    assert parts == RequestParts(
        method="GET",
        path="/orders/a%2Fb%20c/refunds",
        query=(("expand", "items"), ("expand", "payments"), ("limit", "20")),
        headers={"X-Request-Channel": "web", "Accept": "application/json"},
    )


def test_booleans_and_numbers_go_in_the_url_as_json_writes_them():
    config = {**REFUNDS, "path": "/flags/{flag}", "query": ["on", "ratio"]}

    parts = request_parts(config, {"flag": True, "on": False, "ratio": 0.5}, idempotency_key=None)

    assert parts.path == "/flags/true"
    assert parts.query == (("on", "false"), ("ratio", "0.5"))


def test_without_a_method_it_posts_the_arguments_as_json_with_the_key_header():
    parts = request_parts(
        {"url": "https://pay.example.com", "path": "/refunds"},
        {"order_id": "ORD-1", "amount_cents": 100, "note": None},
        idempotency_key="acme/t-1/call_1/refund/ab12",
    )

    # the null is left out: it means "leave it out" (principle 7)
    assert parts.method == "POST"
    assert parts.content == b'{"order_id":"ORD-1","amount_cents":100}'
    assert parts.content_type == "application/json"
    assert parts.headers["Idempotency-Key"] == "acme/t-1/call_1/refund/ab12"


def test_rest_is_what_path_query_and_headers_left_and_a_list_is_exactly_those_arguments():
    config = {
        "url": "https://api.example.com", "method": "PATCH", "path": "/orders/{order_id}",
        "query": ["notify"], "headers": {"X-Channel": "channel"},
    }
    arguments = {"order_id": "ORD-1", "notify": True, "channel": "web", "note": "late", "tags": ["a"]}

    rest = request_parts(config, arguments, idempotency_key=None)
    listed = request_parts({**config, "body": ["note", "missing"]}, arguments, idempotency_key=None)

    assert json.loads(rest.content or b"") == {"note": "late", "tags": ["a"]}
    assert json.loads(listed.content or b"") == {"note": "late"}


@pytest.mark.parametrize(("method", "sends_body"), [("GET", False), ("HEAD", False), ("DELETE", False),
                                                    ("PUT", True), ("PATCH", True), ("POST", True)])
def test_only_writes_send_the_rest_as_a_body_by_default(method, sends_body):
    parts = request_parts({"url": "https://x.example", "method": method}, {"a": 1}, idempotency_key=None)

    assert (parts.content == b'{"a":1}') is sends_body
    assert sends_body or parts.content is None


def test_the_idempotency_header_has_the_configured_name_and_the_wire_form():
    config = {"url": "https://x.example", "idempotency_header": "X-Request-Id"}

    parts = request_parts(config, {}, idempotency_key="acme/t-é/c/t/h")

    assert parts.headers["X-Request-Id"] == "acme/t-%C3%A9/c/t/h"
    assert "Idempotency-Key" not in parts.headers


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param(None, "is needed", id="absent"),
        pytest.param("", "cannot be ''", id="empty: would list the collection"),
        pytest.param("..", "cannot be '..'", id="dot-dot: would climb a level"),
        pytest.param("../../admin", "cannot hold a '.' or '..'", id="dot-dot behind slashes"),
        pytest.param("a\\..\\b", "cannot hold a '.' or '..'", id="dot-dot behind backslashes"),
        pytest.param(["a", "b"], "must be a single value", id="a list"),
    ],
)
def test_a_path_argument_that_would_name_another_resource_is_refused(value, problem):
    with pytest.raises(InvalidArgsError) as refused:
        request_parts(REFUNDS, {"order_id": value}, idempotency_key=None)

    assert problem in refused.value.message
    assert [d.path for d in refused.value.details] == ["/order_id"]


@pytest.mark.parametrize("value", ["line\r\nX-Injected: 1", "José", {"a": 1}])
def test_a_header_argument_must_be_one_printable_ascii_value(value):
    with pytest.raises(InvalidArgsError, match="X-Request-Channel header"):
        request_parts(REFUNDS, {"order_id": "ORD-1", "channel": value}, idempotency_key=None)


def test_a_status_path_template_gets_the_key_as_one_encoded_value():
    config = {"url": "https://x.example", "status_path": "/refunds/by-key/{idempotency_key}",
              "idempotency_header": "X-Request-Id"}

    parts = status_parts(config, idempotency_key="acme/t 1/call_1/refund/ab%12")

    # the wire form (what the write carried in its header), percent-encoded as one value
    assert parts.path == "/refunds/by-key/acme%2Ft%25201%2Fcall_1%2Frefund%2Fab%2512"
    assert parts.method == "GET" and parts.query == () and parts.content is None
    assert parts.headers["X-Request-Id"] == "acme/t%201/call_1/refund/ab%12"


def test_a_status_path_without_the_placeholder_gets_the_key_as_a_query_parameter():
    parts = status_parts({"status_path": "/refunds"}, idempotency_key="acme/t-1/c/t/h")

    # pairs are percent-encoded as they go on the wire
    assert (parts.path, parts.query) == ("/refunds", (("idempotency_key", "acme%2Ft-1%2Fc%2Ft%2Fh"),))


@pytest.mark.parametrize(
    ("pointer", "selected"),
    [
        ("", {"data": {"items": [{"id": 1}], "a/b": 2, "m~n": 3}}),
        ("/data/items", [{"id": 1}]),
        ("/data/items/0/id", 1),
        ("/data/a~1b", 2),
        ("/data/m~0n", 3),
    ],
)
def test_the_response_pointer_selects_the_result(pointer, selected):
    body = {"data": {"items": [{"id": 1}], "a/b": 2, "m~n": 3}}

    assert selected_response({"response_pointer": pointer}, body) == selected


@pytest.mark.parametrize("pointer", ["/missing", "/data/items/1", "/data/items/01", "/data/items/-"])
def test_a_pointer_that_leads_nowhere_is_a_shape_error(pointer):
    with pytest.raises(ResponseShapeError, match=pointer):
        selected_response({"response_pointer": pointer}, {"data": {"items": [{"id": 1}]}})
