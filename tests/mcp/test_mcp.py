"""/mcp end to end with the official MCP Python client, and the protocol's edges over raw HTTP."""

from __future__ import annotations

import json

import anyio
import httpx2
import mcp_types as types
import pytest
from django.test import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from apps.capabilities.models import CapabilityRequest
from apps.ledger.models import LedgerEntry
from apps.tenancy.services import agent_key_issue

SEARCH = {"status": "paid", "start_date": "2026-01-01", "end_date": "2026-01-31", "limit": 20}


def run_client(url: str, headers: dict[str, str], steps, *, on_request=None, on_response=None, **options):
    """Connect the SDK's client to `url` and run `steps(session)`; returns what it returns.
    The hooks, when given, see each HTTP request and response; `options` go to ClientSession
    (extensions and their result claims, say)."""
    hooks = {"request": [on_request] if on_request else [], "response": [on_response] if on_response else []}

    async def scenario():
        async with httpx2.AsyncClient(headers=headers, timeout=30, event_hooks=hooks) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write, **options) as session:
                    return await steps(session)

    return anyio.run(scenario)


@pytest.mark.django_db(transaction=True)
def test_the_mcp_client_initializes_lists_and_calls_through_the_pipeline(
    live_server, key, demo_tools, session_for
):
    headers = {"Authorization": f"Bearer {key}", "X-ToolHub-Session": session_for("u-1001")}

    async def steps(session: ClientSession):
        init = await session.initialize()
        listed = await session.list_tools()
        ok = await session.call_tool("search_orders", SEARCH)
        invalid = await session.call_tool("search_orders", {**SEARCH, "status": "not cancelled"})
        outside = await session.call_tool("cancel_order", {"order_id": "ORD-000042", "reason": "other"})
        asked = await session.call_tool(
            "request_capability",
            {"capability": "cancel orders", "reason": "The user wants to cancel.", "example_arguments": None},
        )
        return init, listed, ok, invalid, outside, asked

    init, listed, ok, invalid, outside, asked = run_client(
        f"{live_server.url}/mcp?toolset=support&phase=lookup", headers, steps
    )

    assert init.server_info.name == "toolhub" and "request_capability" in init.instructions
    assert init.capabilities.tools is not None
    assert [t.name for t in listed.tools] == ["get_order", "search_orders", "request_capability"]
    search = next(t for t in listed.tools if t.name == "search_orders")
    assert "user_id" not in search.input_schema["properties"]

    assert ok.is_error is False
    envelope = json.loads(ok.content[0].text)
    assert envelope == ok.structured_content
    assert (envelope["status"], envelope["tool"]) == ("ok", "search_orders")
    assert envelope["data"]["echo"]["user_id"] == "u-1001"

    assert invalid.is_error is True
    invalid_envelope = json.loads(invalid.content[0].text)
    assert (invalid_envelope["kind"], invalid_envelope["recoverable"]) == ("invalid_args", True)
    assert "pending, paid, cancelled, all" in invalid_envelope["hint"]

    assert outside.is_error is True
    assert json.loads(outside.content[0].text)["kind"] == "unknown_tool"
    assert asked.is_error is False
    # "cancel orders" asked for and cancel_order called outside its phase: one need, two reasons.
    assert asked.structured_content["data"]["recorded"]["capability"] == "cancel_order"
    assert sorted(CapabilityRequest.objects.values_list("name", "reason")) == [
        ("cancel_order", "not_in_phase"), ("cancel_order", "unknown")
    ]


@pytest.mark.django_db(transaction=True)
def test_writes_over_mcp_are_keyed_by_the_task_and_the_connection(live_server, key, demo_tools, session_for):
    headers = {
        "Authorization": f"Bearer {key}",
        "X-ToolHub-Session": session_for("u-1001"),
        "X-ToolHub-Task": "ticket-77",
    }

    async def steps(session: ClientSession):
        await session.initialize()
        return await session.call_tool(
            "cancel_order", {"order_id": "ORD-000042", "reason": "customer_request"}
        )

    result = run_client(f"{live_server.url}/mcp", headers, steps)

    assert result.is_error is False
    entry = LedgerEntry.objects.get()
    assert entry.task_id == "ticket-77"
    assert entry.call_id.startswith("mcp-") and entry.call_id == result.structured_content["call_id"]


@pytest.mark.django_db(transaction=True)
def test_a_wrong_key_is_refused_before_anything_runs(live_server, demo_tools):
    async def steps(session: ClientSession):
        return await session.initialize()

    with pytest.raises(BaseExceptionGroup) as raised:
        run_client(f"{live_server.url}/mcp", {"Authorization": "Bearer thk_wrong"}, steps)

    errors = raised.value.exceptions[0].exceptions
    assert [e.error.message for e in errors] == ["Unauthorized: The agent key is unknown or revoked."]


def rpc(client, method, params=None, *, key, session_id=None, rpc_id=1, **headers):
    body = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
    if rpc_id is not None:
        body["id"] = rpc_id
    extra = {"HTTP_AUTHORIZATION": f"Bearer {key}", **headers}
    if session_id:
        extra["HTTP_MCP_SESSION_ID"] = session_id
    return client.post("/mcp", json.dumps(body), content_type="application/json", **extra)


def initialize(client, key, version="2025-06-18"):
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    return rpc(client, "initialize", params, key=key)


@pytest.mark.django_db
def test_initialize_negotiates_a_version_and_signs_a_session(client, key):
    known = initialize(client, key)
    unknown = initialize(client, key, version="2099-01-01")

    result = types.InitializeResult.model_validate(known.json()["result"])
    assert result.protocol_version == "2025-06-18"
    assert unknown.json()["result"]["protocolVersion"] == "2025-11-25"
    assert known["Mcp-Session-Id"] != unknown["Mcp-Session-Id"]


@pytest.mark.django_db
def test_requests_need_the_session_of_this_agent(client, key, agent):
    other_key = agent_key_issue(agent=type(agent).objects.create(tenant=agent.tenant, name="other")).secret
    session_id = initialize(client, key)["Mcp-Session-Id"]

    missing = rpc(client, "tools/list", key=key)
    forged = rpc(client, "tools/list", key=key, session_id=session_id + "x")
    borrowed = rpc(client, "tools/list", key=other_key, session_id=session_id)
    own = rpc(client, "tools/list", key=key, session_id=session_id)

    assert missing.status_code == 400 and "send initialize first" in missing.json()["error"]["message"]
    assert forged.status_code == borrowed.status_code == 404
    assert own.status_code == 200
    assert [t["name"] for t in own.json()["result"]["tools"]] == ["request_capability"]


@pytest.mark.django_db
def test_a_session_already_served_is_still_this_agents_alone(client, key, agent):
    other_key = agent_key_issue(agent=type(agent).objects.create(tenant=agent.tenant, name="other")).secret
    session_id = initialize(client, key)["Mcp-Session-Id"]
    first = rpc(client, "tools/list", key=key, session_id=session_id)

    borrowed = rpc(client, "tools/list", key=other_key, session_id=session_id)
    again = rpc(client, "tools/list", key=key, session_id=session_id)

    assert first.status_code == again.status_code == 200
    assert borrowed.status_code == 404 and "send initialize again" in borrowed.json()["error"]["message"]


@pytest.mark.django_db
def test_protocol_edges(client, key):
    session_id = initialize(client, key)["Mcp-Session-Id"]

    notification = rpc(client, "notifications/initialized", key=key, session_id=session_id, rpc_id=None)
    ping = rpc(client, "ping", key=key, session_id=session_id)
    unknown_method = rpc(client, "resources/list", {}, key=key, session_id=session_id)
    bad_params = rpc(client, "tools/call", {"arguments": {}}, key=key, session_id=session_id)
    not_json = client.post("/mcp", "{", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    batch = client.post("/mcp", "[]", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    stream = client.get("/mcp", HTTP_AUTHORIZATION=f"Bearer {key}")
    no_key = client.post("/mcp", "{}", content_type="application/json")
    bad_version = rpc(client, "ping", key=key, session_id=session_id, HTTP_MCP_PROTOCOL_VERSION="1999-01-01")

    assert notification.status_code == 202 and notification.content == b""
    assert ping.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert unknown_method.json()["error"]["code"] == types.METHOD_NOT_FOUND
    assert bad_params.json()["error"]["code"] == types.INVALID_PARAMS
    assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, types.PARSE_ERROR)
    assert (batch.status_code, batch.json()["error"]["code"]) == (400, types.INVALID_REQUEST)
    assert stream.status_code == 405
    assert no_key.status_code == 401 and no_key["WWW-Authenticate"] == 'Bearer realm="toolhub"'
    assert bad_version.status_code == 400


@pytest.mark.django_db
def test_an_unknown_toolset_in_the_url_is_an_invalid_params_error(client, key):
    session_id = initialize(client, key)["Mcp-Session-Id"]

    response = client.post(
        "/mcp?toolset=sales",
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
        HTTP_MCP_SESSION_ID=session_id,
    )

    error = response.json()["error"]
    assert error["code"] == types.INVALID_PARAMS and "no toolset named 'sales'" in error["message"]
    assert error["data"]["kind"] == "invalid_args"


@pytest.mark.django_db
def test_an_mcp_client_needs_no_csrf_token_it_authenticates_with_a_bearer_key(key):
    browserless = Client(enforce_csrf_checks=True)

    answer = initialize(browserless, key)

    assert answer.status_code == 200 and answer["Mcp-Session-Id"]


@pytest.mark.django_db
def test_a_foreign_origin_is_refused(client, key):
    response = rpc(client, "ping", key=key, HTTP_ORIGIN="http://evil.example")

    assert response.status_code == 403


@pytest.mark.django_db
def test_older_protocol_versions_are_served_in_their_own_shape(client, key, demo_tools, session_for):
    session_id = initialize(client, key, version="2025-03-26")["Mcp-Session-Id"]
    headers = {"HTTP_MCP_PROTOCOL_VERSION": "2025-03-26", "HTTP_X_TOOLHUB_SESSION": session_for("u-1001")}

    listed = rpc(client, "tools/list", key=key, session_id=session_id, **headers).json()["result"]
    called = rpc(
        client,
        "tools/call",
        {"name": "get_order", "arguments": {"order_id": "ORD-000001"}},
        key=key,
        session_id=session_id,
        rpc_id=2,
        **headers,
    ).json()["result"]

    # Fields of later protocol revisions (cache hints, resultType) are not sent to older clients.
    assert set(listed) == {"tools"}
    assert [t["name"] for t in listed["tools"]] == [
        "cancel_order",
        "get_order",
        "refund_payment",
        "search_orders",
        "request_capability",
    ]
    result = types.CallToolResult.model_validate(called)
    assert result.is_error is False and json.loads(result.content[0].text)["status"] == "ok"
