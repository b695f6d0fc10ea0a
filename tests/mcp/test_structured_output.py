"""Output schemas and annotations over /mcp: what the official client lists and is answered."""

from __future__ import annotations

import json
import logging
import math
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp_types import methods as surfaces
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from apps.gateway.api import mcp_tasks
from apps.gateway.replies import envelope_text
from apps.tenancy.authentication import AgentPrincipal
from tests.mcp.test_mcp import initialize, rpc, run_client

# tests.echo answers {"echo": <the arguments>}.
ECHO_RESULT = {
    "type": "object",
    "properties": {
        "echo": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "user_id": {"type": "string"}},
            "required": ["query"],
        }
    },
    "required": ["echo"],
}
# What the same result does not match: the upstream promised a total it never sends.
COUNTED_RESULT = {
    "type": "object",
    "properties": {"total": {"type": "integer"}},
    "required": ["total"],
}


@pytest.fixture
def structured_tools(publish_tool):
    publish_tool("lookup_echo", output_schema=ECHO_RESULT)
    publish_tool("count_things", output_schema=COUNTED_RESULT)
    # An imported write whose server called it read-only: the reviewed side effect wins.
    publish_tool(
        "close_ticket", side_effect="write",
        annotations={"title": "Close a ticket", "readOnlyHint": True, "openWorldHint": False},
    )
    publish_tool("plain_echo")


@pytest.mark.django_db(transaction=True)
def test_the_sdk_client_sees_output_schemas_annotations_and_structured_content(
    live_server, key, structured_tools, session_for
):
    headers = {"Authorization": f"Bearer {key}", "X-ToolHub-Session": session_for("u-1001")}

    async def steps(session: ClientSession):
        await session.initialize()
        listed = await session.list_tools()
        structured = await session.call_tool("lookup_echo", {"query": "shoes"})
        plain = await session.call_tool("plain_echo", {"query": "shoes"})
        return listed, structured, plain

    listed, structured, plain = run_client(f"{live_server.url}/mcp", headers, steps)

    tools = {t.name: t for t in listed.tools}
    assert tools["lookup_echo"].output_schema == ECHO_RESULT
    assert tools["plain_echo"].output_schema is None
    lookup = tools["lookup_echo"].annotations
    assert (lookup.read_only_hint, lookup.destructive_hint, lookup.idempotent_hint) == (True, False, True)
    close = tools["close_ticket"].annotations
    assert (close.read_only_hint, close.destructive_hint, close.idempotent_hint) == (False, True, True)
    assert (close.title, close.open_world_hint) == ("Close a ticket", False)
    capability = tools["request_capability"].annotations
    assert (capability.read_only_hint, capability.destructive_hint) == (False, False)

    # The client checked the structured content against the listed schema and accepted it.
    assert structured.is_error is False
    assert structured.structured_content == {"echo": {"query": "shoes", "user_id": "u-1001"}}
    envelope = json.loads(structured.content[0].text)
    assert envelope["status"] == "ok" and envelope["data"] == structured.structured_content
    # Without an output schema, the envelope as before.
    assert plain.structured_content == json.loads(plain.content[0].text)


def _call(client, key, session_for, name, arguments):
    session_id = initialize(client, key)["Mcp-Session-Id"]
    return rpc(
        client, "tools/call", {"name": name, "arguments": arguments}, key=key, session_id=session_id,
        rpc_id=2, HTTP_X_TOOLHUB_SESSION=session_for("u-1001"),
    ).json()["result"]


@pytest.mark.django_db
def test_a_result_that_breaks_its_output_schema_is_answered_as_text_only(
    client, key, structured_tools, session_for, caplog
):
    with caplog.at_level(logging.WARNING, logger="toolhub.mcp"):
        result = _call(client, key, session_for, "count_things", {"query": "shoes"})

    assert "structuredContent" not in result and result["isError"] is False
    envelope = json.loads(result["content"][0]["text"])
    assert envelope["status"] == "ok" and envelope["data"]["echo"]["query"] == "shoes"
    assert "structured content of count_things v1 left out: the result does not match the output schema" \
        in caplog.text
    assert "shoes" not in caplog.text  # the log names where it failed, never the result's values


@pytest.mark.django_db
def test_an_error_of_a_tool_with_an_output_schema_has_no_structured_content(
    client, key, structured_tools, session_for
):
    result = _call(client, key, session_for, "lookup_echo", {"query": 7})

    assert result["isError"] is True and "structuredContent" not in result
    assert json.loads(result["content"][0]["text"])["kind"] == "invalid_args"


@pytest.mark.django_db
@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
@pytest.mark.parametrize(
    "envelope",
    [
        {"status": "ok", "tool": "t", "data": {"none": None, "nested": [1, None, {"x": "é\u2028"}]}},
        {
            "status": "ok", "tool": "t",
            "data": {
                "total": Decimal("12.50"), "at": datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
                "pair": (1, 2), "id": uuid.UUID(int=7), "ratio": math.nan, "span": timedelta(seconds=1.5),
            },
        },
        {"status": "error", "kind": "unknown_tool", "message": "No tool named t.", "hint": None},
    ],
    ids=["json", "python values", "error"],
)
def test_a_tools_call_result_goes_on_a_handshake_wire_as_the_sdk_serializes_it(agent, version, envelope):
    principal = AgentPrincipal(
        agent_id=agent.pk, agent_name=agent.name, tenant_id=agent.tenant_id, tenant_slug="acme", key_id=0
    )
    sdk_result = types.CallToolResult(
        content=[types.TextContent(type="text", text=envelope_text(envelope))],
        structured_content=envelope,  # the envelope itself: no tool of this agent has an output schema
        is_error=envelope["status"] == "error",
    )

    wire = mcp_tasks.call_tool_wire(envelope, principal, None, None)

    assert wire == surfaces.serialize_server_result(
        "tools/call", version, sdk_result.model_dump(by_alias=True, mode="json", exclude_none=True)
    )
