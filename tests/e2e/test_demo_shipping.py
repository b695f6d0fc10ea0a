"""An agent calls the seeded demo shipping MCP server's tools through ToolHub, with the
server running as `make run` runs it (a subprocess on loopback): REST invoke and /mcp."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from apps.demo_shop.seed import demo_seed
from tests.e2e.conftest import Agent
from tests.shipping_upstream import ShippingServer, shipping_server

SEEDED_KEY = "demo-shipping-secret"  # the settings' default DEMO_SHIPPING_API_KEY


@pytest.fixture
def demo_shipping(tmp_path: Any) -> Iterator[ShippingServer]:
    with shipping_server(tmp_path / "state.json", key=SEEDED_KEY) as server:
        yield server


@pytest.fixture
def agent(
    transactional_db: None, live_server: Any, settings: Any, demo_shipping: ShippingServer
) -> Iterator[Agent]:
    settings.TOOLHUB_DEMO_SHIPPING_MCP_URL = demo_shipping.url
    seed = demo_seed()
    agent = Agent(live_server.url, seed.agent_key)
    agent.login("u-1001")
    yield agent
    agent.http.close()


def test_an_agent_tracks_a_shipment_through_rest_invoke(agent):
    envelope = agent.invoke("track_shipment", '{"shipment_id": " SHP-000042"}', toolset="support",
                            phase="lookup")
    malformed = agent.invoke("track_shipment", {"shipment_id": "42"}, call_id="call_2")

    assert (envelope["status"], envelope["tool"], envelope["version"]) == ("ok", "track_shipment", 1)
    assert envelope["data"]["shipment_id"] == "SHP-000042"
    assert envelope["data"]["carrier"] in ("DHL", "UPS", "DPD")
    # ToolHub's own schema refuses it before anything is sent
    assert (malformed["status"], malformed["kind"]) == ("error", "invalid_args")
    assert "/shipment_id" in json.dumps(malformed["details"])


def test_an_agent_tracks_a_shipment_through_toolhubs_mcp_endpoint(agent):
    headers = {"X-ToolHub-Session": agent.session, "Accept": "application/json, text/event-stream"}
    init = agent.http.post("/mcp", headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}},
    })
    session = {**headers, "Mcp-Session-Id": init.headers["Mcp-Session-Id"]}
    called = agent.http.post("/mcp", headers=session, json={
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "track_shipment", "arguments": {"shipment_id": "SHP-000042"}},
    }).json()["result"]

    assert called["isError"] is False
    envelope = json.loads(called["content"][0]["text"])
    assert envelope["status"] == "ok" and envelope["data"]["shipment_id"] == "SHP-000042"
    # the server declared what track_shipment answers: the data comes structured, checked against it
    assert called["structuredContent"] == envelope["data"]
