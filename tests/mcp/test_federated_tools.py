"""End to end: the official MCP client asks ToolHub's `/mcp` for a tool ToolHub federates from
an MCP server (the SDK's own server, a process of its own on loopback), imported from its
`tools/list`, published and granted; the call goes through the pipeline and the ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp.client.session import ClientSession

from apps.imports.mcp_services import mcp_import
from apps.ledger.models import LedgerEntry, LedgerState
from apps.tenancy.services import agent_key_issue
from tests.factories import UpstreamFactory
from tests.mcp_upstream import free_port, mcp_upstream_process

from .test_mcp import run_client


@pytest.mark.django_db(transaction=True)
def test_the_mcp_client_calls_a_federated_write_through_the_ledger(live_server, agent, tmp_path: Path):
    # given: the shipping server's tools imported, published and granted to the agent
    state_file = tmp_path / "shipping.json"
    with mcp_upstream_process(free_port(), state_file) as server:
        UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=server.url, status_tool="pickup_status")
        mcp_import(tenant=agent.tenant, upstream="shipping", actor="test",
                   tool_names=["track_shipment", "schedule_pickup"], publish=True, grant_agents=[agent.name])
        headers = {"Authorization": f"Bearer {agent_key_issue(agent=agent).secret}"}

        # when: the official client lists and calls them through ToolHub
        async def steps(session: ClientSession):
            await session.initialize()
            listed = await session.list_tools()
            read = await session.call_tool("track_shipment", {"shipment_id": "s-7"})
            write = await session.call_tool("schedule_pickup", {"shipment_id": "s-7"})
            smuggled = await session.call_tool(
                "schedule_pickup", {"shipment_id": "s-8", "idempotency_key": "chosen-by-the-model"}
            )
            return listed, read, write, smuggled

        listed, read, write, smuggled = run_client(f"{live_server.url}/mcp", headers, steps)
        booked = json.loads(state_file.read_text())["booked"]

    # then: ToolHub's reviewed versions are listed; the key is ToolHub's, never the model's
    tools = {tool.name: tool for tool in listed.tools}
    assert {"track_shipment", "schedule_pickup"} <= set(tools)
    assert list(tools["schedule_pickup"].input_schema["properties"]) == ["shipment_id"]
    # the server's outputSchema comes with the import; the hints follow ToolHub's side effect
    # (the server called schedule_pickup not destructive; ToolHub runs it as a ledgered write)
    assert tools["track_shipment"].output_schema["type"] == "object"
    assert tools["track_shipment"].annotations.read_only_hint is True
    pickup_hints = tools["schedule_pickup"].annotations
    assert (pickup_hints.read_only_hint, pickup_hints.destructive_hint) == (False, True)
    assert read.is_error is False
    assert read.structured_content == {"shipment_id": "s-7", "status": "in transit"}

    assert write.is_error is False, write.content
    envelope = json.loads(write.content[0].text)
    assert write.structured_content == envelope["data"]
    assert (envelope["status"], envelope["tool"]) == ("ok", "schedule_pickup")
    assert envelope["data"] == {"pickup_id": "pu-1", "shipment_id": "s-7"}
    entry = LedgerEntry.objects.get(pk=envelope["execution_id"])
    assert (entry.state, entry.result) == (LedgerState.COMMITTED, envelope["data"])
    assert booked == {entry.key: envelope["data"]}

    assert smuggled.is_error is True
    assert json.loads(smuggled.content[0].text)["kind"] == "invalid_args"
    assert LedgerEntry.objects.count() == 1
