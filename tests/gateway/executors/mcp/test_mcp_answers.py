"""How a `tools/call` answer is read (executors/mcp/tool_call.py), against a server on loopback
that answers as scripted: an event stream with messages before the answer, an HTTP error that
carries a JSON-RPC error, an answer that is not JSON-RPC, a result that is not complete. The
session is made as the SDK makes it (server/discover on 2026-07-28)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from apps.ledger.models import LedgerEntry, LedgerState
from tests.factories import UpstreamFactory
from tests.gateway.conftest import invoke
from tests.gateway.mcp_tools import mcp_tool
from tests.mcp_upstream import free_port, served_on_thread

pytestmark = pytest.mark.django_db

REVISION = "2026-07-28"
DISCOVERED = {"supportedVersions": [REVISION], "capabilities": {"tools": {}}, "resultType": "complete",
              "cacheScope": "private", "ttlMs": 0}
Answer = tuple[int, str, bytes]


@dataclass
class Scripted:
    """A server whose answer to each `tools/call` is `answer(request)`; every POST is kept."""

    answer: Callable[[dict[str, Any]], Answer]
    url: str = ""
    posts: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)

    def calls(self) -> list[dict[str, Any]]:
        return [body for _, body in self.posts if body.get("method") == "tools/call"]


def _app(server: Scripted) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        server.posts.append(({k.decode(): v.decode() for k, v in scope["headers"]}, request))
        if request.get("method") == "server/discover":
            status, content_type, payload = 200, "application/json", json.dumps(
                {"jsonrpc": "2.0", "id": request["id"], "result": DISCOVERED}).encode()
        elif request.get("method") == "tools/call":
            status, content_type, payload = server.answer(request)
        else:  # the client's answer to a request of the server
            status, content_type, payload = 202, "application/json", b""
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type.encode())]})
        await send({"type": "http.response.body", "body": payload})

    return app


@contextmanager
def scripted(answer: Callable[[dict[str, Any]], Answer]) -> Iterator[Scripted]:
    server = Scripted(answer)
    port = free_port()
    server.url = f"http://127.0.0.1:{port}/mcp"
    with served_on_thread(_app(server), port, lifespan="off"):
        yield server


def _json(request: dict[str, Any], **outcome: Any) -> Answer:
    return 200, "application/json", json.dumps({"jsonrpc": "2.0", "id": request["id"], **outcome}).encode()


def _events(*messages: dict[str, Any]) -> Answer:
    return 200, "text/event-stream", b"".join(
        f"event: message\ndata: {json.dumps(message)}\n\n".encode() for message in messages
    )


RESULT = {"content": [{"type": "text", "text": "in transit"}], "isError": False, "resultType": "complete",
          "structuredContent": {"shipment_id": "s-1", "status": "in transit"}}


def test_a_call_is_stamped_as_the_sdk_stamps_it_on_2026_07_28(api, agent):
    with scripted(lambda request: _json(request, result=RESULT)) as server:
        UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=server.url)
        mcp_tool(agent, "track_shipment")

        body = invoke(api, "track_shipment", {"shipment_id": "s-1"}).json()

    assert body["status"] == "ok" and body["data"] == {"shipment_id": "s-1", "status": "in transit"}
    [(headers, call)] = [(h, b) for h, b in server.posts if b.get("method") == "tools/call"]
    assert (headers["mcp-protocol-version"], headers["mcp-method"], headers["mcp-name"]) == (
        REVISION, "tools/call", "track_shipment")
    assert call["params"]["arguments"] == {"shipment_id": "s-1"}
    assert call["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == REVISION


def test_an_answer_streamed_after_a_notification_and_a_request_of_the_server_is_read(api, agent):
    # given: an event stream with a progress notification and a ping of the server's before the answer
    def answer(request: dict[str, Any]) -> Answer:
        return _events(
            {"jsonrpc": "2.0", "method": "notifications/progress",
             "params": {"progressToken": 1, "progress": 1}},
            {"jsonrpc": "2.0", "id": "server-1", "method": "ping"},
            {"jsonrpc": "2.0", "id": request["id"], "result": RESULT},
        )

    with scripted(answer) as server:
        UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=server.url)
        mcp_tool(agent, "track_shipment")

        # when
        body = invoke(api, "track_shipment", {"shipment_id": "s-1"}).json()

    # then: the answer is the call's result, and the server's ping was answered
    assert body["status"] == "ok" and body["data"] == {"shipment_id": "s-1", "status": "in transit"}
    assert {"jsonrpc": "2.0", "id": "server-1", "result": {}} in [b for _, b in server.posts]


def test_an_http_error_carrying_invalid_params_is_invalid_args(api, agent):
    def answer(request: dict[str, Any]) -> Answer:
        return 400, "application/json", json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "shipment_id is unknown"}}
        ).encode()

    with scripted(answer) as server:
        UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=server.url)
        mcp_tool(agent, "schedule_pickup", side_effect="write")

        body = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()

    assert (body["status"], body["kind"], body["recoverable"]) == ("error", "invalid_args", True), body
    assert "shipment_id is unknown" in body["message"]
    assert list(LedgerEntry.objects.values_list("state", flat=True)) == [LedgerState.FAILED]


@pytest.mark.parametrize("outcome", [
    {"result": {**RESULT, "resultType": "input_required"}},
    {"answer": "not JSON-RPC"},
], ids=["input-required", "not-json-rpc"])
def test_a_write_answered_with_something_else_than_a_result_is_unknown_and_not_sent_again(
    api, agent, outcome
):
    # given: a server that answers a write with no result ToolHub can take
    with scripted(lambda request: _json(request, **outcome)) as server:
        UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=server.url)
        mcp_tool(agent, "schedule_pickup", side_effect="write")

        # when
        body = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()

    # then: it may have been applied, so it was sent once, and the entry waits to be reconciled
    assert (body["status"], body["kind"], body["recoverable"]) == ("error", "upstream_error", False), body
    assert len(server.calls()) == 1
    assert list(LedgerEntry.objects.values_list("state", flat=True)) == [LedgerState.UNKNOWN]
