"""The http executor against a real upstream on loopback: what arrives there, what the model
reads back, and what the ledger records for every way a call can end."""

from __future__ import annotations

import pytest

from apps.gateway.execution_requests import entry_execution_request
from apps.gateway.reconciliation import ledger_reconcile_entry
from apps.ledger.models import LedgerEntry, LedgerState
from tests.gateway.conftest import invoke
from tests.http_upstream import Answer, Received

pytestmark = pytest.mark.django_db

_TEXT = {"type": "string", "description": "A value."}
ORDER_PARAMETERS = {
    "type": "object",
    "properties": {
        "order_id": _TEXT,
        "expand": {"type": "array", "items": _TEXT, "description": "What to include."},
        "limit": {"type": ["integer", "null"], "description": "At most this many."},
        "channel": _TEXT,
        "note": _TEXT,
        "amount_cents": {"type": "integer", "description": "Cents."},
    },
    "required": ["order_id"],
    "additionalProperties": False,
}


@pytest.fixture
def http_tool(publish_tool, upstream):
    """A published tool of the upstream's API; keyword arguments are its executor config."""

    def publish(*, side_effect: str = "readonly", timeout_s: float = 2.0, **config):
        return publish_tool(
            "order_call",
            parameters=ORDER_PARAMETERS,
            context_bindings={},
            side_effect=side_effect,
            timeout_s=timeout_s,
            executor="http",
            executor_config={"url": upstream.url + "/api", **config},
        )

    return publish


def test_a_get_sends_path_query_and_headers_and_returns_the_selected_part(api, http_tool, upstream):
    # given: an upstream that wraps its answers in an envelope of its own
    http_tool(
        method="GET", path="/orders/{order_id}/refunds", query=["expand", "limit"],
        headers={"X-Request-Channel": "channel"}, response_pointer="/data",
    )
    upstream.answer = lambda received: Answer(body={"data": [{"refund_id": "re_1"}], "meta": {"page": 1}})

    # when
    arguments = {"order_id": "a/b c", "expand": ["items", "payments"], "limit": None, "channel": "web"}
    body = invoke(api, "order_call", arguments).json()

    # then: one path segment, arrays repeated, null left out, the header from its argument, no body
    assert (body["status"], body["data"]) == ("ok", [{"refund_id": "re_1"}])
    received = upstream.last
    assert received.method == "GET"
    assert received.target == "/api/orders/a%2Fb%20c/refunds?expand=items&expand=payments"
    assert received.segments == ["api", "orders", "a/b c", "refunds"]
    assert received.headers["x-request-channel"] == "web"
    assert received.body == b"" and "idempotency-key" not in received.headers


def test_a_write_sends_the_rest_as_json_with_the_key_in_the_configured_header(api, http_tool, upstream):
    # given
    http_tool(side_effect="write", method="PUT", path="/orders/{order_id}", idempotency_header="X-Request-Id")
    upstream.answer = lambda received: Answer(status=201, body={"updated": True})

    # when
    body = invoke(api, "order_call", {"order_id": "ORD-1", "note": "late", "amount_cents": 100}).json()

    # then
    assert (body["status"], body["data"]) == ("ok", {"updated": True})
    entry = LedgerEntry.objects.get()
    assert entry.state == LedgerState.COMMITTED
    received = upstream.last
    assert (received.method, received.path) == ("PUT", "/api/orders/ORD-1")
    assert received.json() == {"note": "late", "amount_cents": 100}
    assert received.headers["x-request-id"] == entry.key and "idempotency-key" not in received.headers


def test_a_listed_body_sends_only_those_arguments(api, http_tool, upstream):
    http_tool(side_effect="write", method="POST", path="/orders/{order_id}/notes", body=["note"])

    invoke(api, "order_call", {"order_id": "ORD-1", "note": "late", "channel": "web"})

    assert upstream.last.json() == {"note": "late"}


def test_an_argument_that_cannot_fill_the_path_is_refused_with_nothing_sent(api, http_tool, upstream):
    http_tool(side_effect="write", method="DELETE", path="/orders/{order_id}")

    body = invoke(api, "order_call", {"order_id": ".."}).json()

    assert (body["kind"], body["recoverable"]) == ("invalid_args", True)
    assert body["details"][0]["path"] == "/order_id"
    assert upstream.received == []
    assert LedgerEntry.objects.get().state == LedgerState.FAILED


@pytest.mark.parametrize(
    ("status", "kind"),
    [(404, "not_found"), (400, "invalid_args"), (422, "invalid_args"), (409, "business_rule"),
     (429, "rate_limited")],
)
def test_a_4xx_is_a_rejection_of_its_kind_and_the_write_failed(api, http_tool, upstream, status, kind):
    # given
    http_tool(side_effect="write", path="/refunds")
    upstream.answer = lambda received: Answer(status=status, body={"error": {"message": "not like this"}})

    # when
    body = invoke(api, "order_call", {"order_id": "ORD-1"}).json()

    # then: nothing was applied, and the upstream's reason is passed on
    assert body["kind"] == kind
    assert kind == "rate_limited" or "not like this" in body["message"]
    assert LedgerEntry.objects.get().state == LedgerState.FAILED


def test_a_500_to_a_write_leaves_its_outcome_unknown(api, http_tool, upstream):
    http_tool(side_effect="write", path="/refunds")
    upstream.answer = lambda received: Answer(status=500, body={"error": {"message": "oops"}})

    body = invoke(api, "order_call", {"order_id": "ORD-1"}).json()

    assert body["kind"] == "upstream_error" and "Do not call again" in body["hint"]
    assert LedgerEntry.objects.get().state == LedgerState.UNKNOWN


def test_a_timeout_leaves_a_write_unknown(api, http_tool, upstream):
    http_tool(side_effect="write", path="/refunds", timeout_s=0.3)
    upstream.answer = lambda received: Answer(body={"ok": True}, delay_s=1.0)

    body = invoke(api, "order_call", {"order_id": "ORD-1"}).json()

    assert body["kind"] == "timeout" and "Do not call again" in body["hint"]
    assert LedgerEntry.objects.get().state == LedgerState.UNKNOWN
    assert len(upstream.received) == 1


def test_a_refused_connection_fails_the_write_and_says_nothing_was_sent(api, publish_tool):
    publish_tool(
        "order_call", parameters=ORDER_PARAMETERS, context_bindings={}, side_effect="write", executor="http",
        executor_config={"url": "http://127.0.0.1:9", "path": "/refunds"},
    )

    body = invoke(api, "order_call", {"order_id": "ORD-1"}).json()

    assert body["kind"] == "upstream_error" and "nothing was sent" in body["message"]
    assert LedgerEntry.objects.get().state == LedgerState.FAILED


@pytest.mark.parametrize(
    ("side_effect", "state"), [("readonly", None), ("write", LedgerState.UNKNOWN)]
)
def test_an_answer_without_what_the_pointer_selects_is_an_upstream_error(
    api, http_tool, upstream, side_effect, state
):
    # given: the upstream changed its answer's shape
    http_tool(side_effect=side_effect, path="/orders/{order_id}", response_pointer="/data")
    upstream.answer = lambda received: Answer(body={"order": {"order_id": "ORD-1"}})

    # when
    body = invoke(api, "order_call", {"order_id": "ORD-1"}).json()

    # then: a read is an upstream error; a write that answered success may have happened
    assert body["kind"] == "upstream_error"
    assert [e.state for e in LedgerEntry.objects.all()] == ([state] if state else [])


def test_a_timed_out_write_is_committed_by_asking_the_status_template(api, http_tool, upstream):
    # given: a write that timed out, and the upstream's status endpoint by key in the path
    http_tool(
        side_effect="write", path="/refunds", timeout_s=0.3, response_pointer="/data",
        idempotency_header="X-Request-Id", status_path="/refunds/by-key/{idempotency_key}",
    )
    applied: dict[str, dict] = {}

    def answer(received: Received) -> Answer:
        if received.method == "POST":
            applied[received.headers["x-request-id"]] = {"refund_id": "re_9", **received.json()}
            return Answer(status=201, body={"data": applied[received.headers["x-request-id"]]}, delay_s=1.0)
        found = applied.get(received.segments[-1])
        return Answer(body={"data": found}) if found else Answer(status=404, body={})

    upstream.answer = answer
    first = invoke(api, "order_call", {"order_id": "ORD-1", "amount_cents": 250}, task_id="t/1%é").json()
    entry = LedgerEntry.objects.get()
    assert first["kind"] == "timeout" and entry.state == LedgerState.UNKNOWN

    # when
    state = ledger_reconcile_entry(entry_id=entry.pk)

    # then: the key went in one segment, and the stored result is the selected part
    assert state == LedgerState.COMMITTED
    status_request = upstream.last
    assert status_request.method == "GET" and len(status_request.segments) == 4
    sent_key = upstream.received[0].headers["x-request-id"]
    assert status_request.segments[-1] == status_request.headers["x-request-id"] == sent_key
    replay = invoke(api, "order_call", {"order_id": "ORD-1", "amount_cents": 250}, task_id="t/1%é").json()
    assert (replay["status"], replay["cached"]) == ("ok", True)
    assert replay["data"] == {"refund_id": "re_9", "order_id": "ORD-1", "amount_cents": 250}


def test_a_status_path_without_a_placeholder_asks_with_the_key_as_a_query_parameter(api, http_tool, upstream):
    http_tool(side_effect="write", path="/refunds", timeout_s=0.3, status_path="/refunds")
    upstream.answer = lambda received: (
        Answer(delay_s=1.0) if received.method == "POST" else Answer(status=404, body={})
    )
    invoke(api, "order_call", {"order_id": "ORD-1"})
    entry = LedgerEntry.objects.get()

    state = ledger_reconcile_entry(entry_id=entry.pk)

    assert state == LedgerState.FAILED
    assert upstream.last.path == "/api/refunds"
    assert upstream.last.query == [("idempotency_key", entry.key)]


def test_the_executor_is_told_which_tenant_calls(api, http_tool, agent):
    http_tool(side_effect="write", path="/refunds")
    invoke(api, "order_call", {"order_id": "ORD-1"})

    assert entry_execution_request(LedgerEntry.objects.get()).tenant_id == agent.tenant_id


def _publish_api_tool(publish_tool, upstream, properties, **config):
    return publish_tool(
        "api_call",
        parameters={"type": "object", "properties": properties, "additionalProperties": False},
        context_bindings={}, side_effect="write", executor="http",
        executor_config={"url": upstream.url + "/api", **config},
    )


def test_a_form_body_reaches_the_upstream_in_stripes_bracket_notation(api, publish_tool, upstream):
    # given: Stripe's post_customers, whose document takes a form body
    _publish_api_tool(
        publish_tool, upstream,
        {"email": _TEXT, "name": _TEXT,
         "metadata": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Tags."}},
        method="POST", path="/v1/customers", body_media_type="application/x-www-form-urlencoded",
    )

    # when
    invoke(api, "api_call", {"email": "a@b.c", "name": "Jenny", "metadata": {"order_id": "ORD-1"}})

    # then
    received = upstream.last
    assert received.headers["content-type"] == "application/x-www-form-urlencoded"
    assert received.body == b"email=a%40b.c&name=Jenny&metadata[order_id]=ORD-1"


def test_a_patch_sends_only_the_fields_named_and_the_nulls_the_api_accepts(api, publish_tool, upstream):
    # given: GitHub's issues_update, where a null milestone clears it and a null title is refused
    nullable = {"type": ["string", "null"], "description": "A value, or null."}
    _publish_api_tool(
        publish_tool, upstream, {"number": {"type": "integer", "description": "The issue."},
                                 "state": _TEXT, "title": nullable, "milestone": nullable},
        method="PATCH", path="/issues/{number}", send_null=["/milestone"],
    )

    # when
    invoke(api, "api_call", {"number": 7, "state": "closed", "title": None})
    invoke(api, "api_call", {"number": 7, "title": None, "milestone": None}, call_id="call_2")

    # then
    first, second = upstream.received
    assert (first.headers["content-type"], first.body) == ("application/json", b'{"state":"closed"}')
    assert second.body == b'{"milestone":null}'


def test_styled_query_and_path_reach_the_upstream_as_written(api, publish_tool, upstream):
    _publish_api_tool(
        publish_tool, upstream,
        {"path": _TEXT, "created": {"type": "object", "description": "Bounds."},
         "ids": {"type": "array", "items": {"type": "integer"}, "description": "Ids."}},
        method="GET", path="/contents/{path}", query=["created", "ids"],
        serialization={"path": {"multi_segment": True}, "created": {"style": "deepObject"},
                       "ids": {"explode": False}},
    )

    invoke(api, "api_call", {"path": "docs/a.md", "created": {"gte": 1}, "ids": [1, 2]})

    assert upstream.last.target == "/api/contents/docs/a.md?created[gte]=1&ids=1,2"
