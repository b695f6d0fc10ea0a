"""/mcp on MCP 2026-07-28 (no initialize, the envelope in every request) beside the handshake
revisions, with the official MCP Python client, and the envelope's checks over raw HTTP."""

from __future__ import annotations

import json

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from apps.common.compat.mcp_client import negotiate_auto
from apps.ledger.models import LedgerEntry

from .test_mcp import SEARCH, run_client

MODERN = "2026-07-28"
META = {
    types.PROTOCOL_VERSION_META_KEY: MODERN,
    types.CLIENT_CAPABILITIES_META_KEY: {},
    types.CLIENT_INFO_META_KEY: {"name": "t", "version": "1"},
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("connect, version", [("discover", MODERN), ("initialize", "2025-11-25")])
def test_the_sdk_client_lists_and_calls_on_both_wires(
    live_server, key, demo_tools, session_for, connect, version
):
    headers = {"Authorization": f"Bearer {key}", "X-ToolHub-Session": session_for("u-1001")}
    session_ids: list[str] = []

    async def on_response(response):
        if "mcp-session-id" in response.headers:
            session_ids.append(response.headers["mcp-session-id"])

    async def steps(session: ClientSession):
        await getattr(session, connect)()
        listed = await session.list_tools()
        ok = await session.call_tool("search_orders", SEARCH)
        refused = await session.call_tool("search_orders", {**SEARCH, "status": "not cancelled"})
        return session, listed, ok, refused

    session, listed, ok, refused = run_client(
        f"{live_server.url}/mcp?toolset=support&phase=lookup", headers, steps, on_response=on_response
    )

    assert session.protocol_version == version
    assert session.server_info.name == "toolhub" and "request_capability" in session.instructions
    assert session.server_capabilities.tools is not None
    assert [t.name for t in listed.tools] == ["get_order", "search_orders", "request_capability"]
    assert ok.is_error is False
    envelope = ok.structured_content
    assert (envelope["status"], envelope["data"]["echo"]["user_id"]) == ("ok", "u-1001")
    assert refused.is_error is True
    assert json.loads(refused.content[0].text)["kind"] == "invalid_args"
    # The 2026 wire is stateless: no session is ever issued on it.
    assert bool(session_ids) is (connect == "initialize")


@pytest.mark.django_db(transaction=True)
def test_the_sdk_clients_own_negotiation_picks_2026_07_28(live_server, key, demo_tools):
    async def steps(session: ClientSession):
        await negotiate_auto(session)  # what `mcp.Client(mode="auto")`, its default, runs
        return session.protocol_version, session.discover_result

    version, discovered = run_client(f"{live_server.url}/mcp", {"Authorization": f"Bearer {key}"}, steps)

    assert version == MODERN
    assert set(discovered.supported_versions) >= {"2025-11-25", MODERN}
    assert (discovered.ttl_ms > 0, discovered.cache_scope) == (True, "private")


@pytest.mark.django_db(transaction=True)
def test_a_header_that_disagrees_with_the_body_is_refused_before_anything_runs(
    live_server, key, demo_tools, session_for
):
    headers = {"Authorization": f"Bearer {key}", "X-ToolHub-Session": session_for("u-1001")}

    async def swap_the_tool_name(request):
        # An intermediary routes on Mcp-Name: one that differs from the body's tool is refused.
        if request.headers.get("mcp-name") == "cancel_order":
            request.headers["mcp-name"] = "get_order"

    async def steps(session: ClientSession):
        await session.discover()
        with pytest.raises(MCPError) as raised:
            await session.call_tool("cancel_order", {"order_id": "ORD-000042", "reason": "customer_request"})
        return raised.value

    error = run_client(f"{live_server.url}/mcp", headers, steps, on_request=swap_the_tool_name)

    assert error.error.code == types.HEADER_MISMATCH and "mcp-name" in error.error.message
    assert not LedgerEntry.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_wrong_key_is_refused_on_2026_07_28(live_server, demo_tools):
    async def steps(session: ClientSession):
        with pytest.raises(MCPError) as raised:
            await session.send_discover(MODERN)
        return raised.value

    error = run_client(f"{live_server.url}/mcp", {"Authorization": "Bearer thk_wrong"}, steps)

    assert error.error.message == "Unauthorized: The agent key is unknown or revoked."


def modern(client, method, params=None, *, key, rpc_id=1, meta=META, **headers):
    body = {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": {**(params or {}), "_meta": meta}}
    extra = {
        "HTTP_AUTHORIZATION": f"Bearer {key}",
        "HTTP_MCP_PROTOCOL_VERSION": meta.get(types.PROTOCOL_VERSION_META_KEY, MODERN),
        "HTTP_MCP_METHOD": method,
        **headers,
    }
    return client.post("/mcp", json.dumps(body), content_type="application/json", **extra)


@pytest.mark.django_db
def test_every_result_says_its_type_and_lists_are_cached_privately(client, key, demo_tools, session_for):
    discovered = modern(client, "server/discover", key=key)
    listed = modern(client, "tools/list", key=key)
    called = modern(
        client,
        "tools/call",
        {"name": "get_order", "arguments": {"order_id": "ORD-000001"}},
        key=key,
        HTTP_MCP_NAME="get_order",
        HTTP_X_TOOLHUB_SESSION=session_for("u-1001"),
    )

    for response in (discovered, listed, called):
        result = response.json()["result"]
        assert response.status_code == 200 and "Mcp-Session-Id" not in response
        assert result["resultType"] == "complete"
        assert result["_meta"][types.SERVER_INFO_META_KEY]["name"] == "toolhub"
    assert discovered.json()["result"]["cacheScope"] == listed.json()["result"]["cacheScope"] == "private"
    assert listed.json()["result"]["ttlMs"] > 0
    assert types.CallToolResult.model_validate(called.json()["result"]).is_error is False


@pytest.mark.django_db
def test_the_envelope_is_checked_on_every_request(client, key):
    no_meta = client.post(
        "/mcp",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
        HTTP_MCP_PROTOCOL_VERSION=MODERN,
        HTTP_MCP_METHOD="tools/list",
    )
    wrong_method = modern(client, "tools/list", key=key, HTTP_MCP_METHOD="tools/call")
    no_header = modern(client, "tools/list", key=key, HTTP_MCP_METHOD="")
    future = {**META, types.PROTOCOL_VERSION_META_KEY: "2099-01-01"}
    unsupported = modern(client, "tools/list", key=key, meta=future)
    removed = modern(client, "ping", key=key)
    handshake = modern(client, "initialize", key=key)
    not_capabilities = modern(
        client, "tools/list", key=key, meta={**META, types.CLIENT_CAPABILITIES_META_KEY: ["roots"]}
    )

    assert (no_meta.status_code, no_meta.json()["error"]["code"]) == (400, types.INVALID_PARAMS)
    assert (wrong_method.status_code, wrong_method.json()["error"]["code"]) == (400, types.HEADER_MISMATCH)
    assert "mcp-method" in wrong_method.json()["error"]["message"]
    assert no_header.json()["error"]["code"] == types.HEADER_MISMATCH
    error = unsupported.json()["error"]
    assert (unsupported.status_code, error["code"]) == (400, types.UNSUPPORTED_PROTOCOL_VERSION)
    assert error["data"] == {"supported": [MODERN], "requested": "2099-01-01"}
    assert (removed.status_code, removed.json()["error"]["code"]) == (404, types.METHOD_NOT_FOUND)
    assert handshake.json()["error"]["code"] == types.METHOD_NOT_FOUND
    assert not_capabilities.status_code == 400
    assert not_capabilities.json()["error"]["code"] == types.INVALID_PARAMS


@pytest.mark.django_db
def test_without_a_connection_one_users_requests_share_a_task_and_the_task_header_names_another(
    client, key, demo_tools, session_for
):
    def cancel(order_id, user="u-1001", **headers):
        return modern(
            client,
            "tools/call",
            {"name": "cancel_order", "arguments": {"order_id": order_id, "reason": "customer_request"}},
            key=key,
            HTTP_MCP_NAME="cancel_order",
            HTTP_X_TOOLHUB_SESSION=session_for(user),
            **headers,
        ).json()["result"]

    first = cancel("ORD-000042")
    second = cancel("ORD-000045")
    grouped = cancel("ORD-000043", HTTP_X_TOOLHUB_TASK="ticket-77")
    other_user = cancel("ORD-000044", user="u-2002")

    calls = [first, second, grouped, other_user]
    assert [c["isError"] for c in calls] == [False] * 4
    entries = {entry.call_id: entry for entry in LedgerEntry.objects.all()}
    task_of = [entries[c["structuredContent"]["call_id"]].task_id for c in calls]
    # each request is a call of its own; one user's requests are one task unless named
    assert len(entries) == 4
    assert task_of[0] == task_of[1] and task_of[0].startswith("mcp-user-")
    assert task_of[2] == "ticket-77"
    assert task_of[3] != task_of[0] and task_of[3].startswith("mcp-user-")
    # the task names a digest of the session, never the token
    assert session_for("u-1001") not in task_of[0]
