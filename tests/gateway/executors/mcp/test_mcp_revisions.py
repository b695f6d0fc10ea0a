"""The `mcp` executor speaks to each upstream on the newest MCP revision it serves: 2026-07-28
to a server that answers server/discover (the SDK's own server on loopback), the initialize
handshake to one of before, and a call goes through either way."""

from __future__ import annotations

import pytest
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

from tests.factories import UpstreamFactory
from tests.gateway.conftest import invoke
from tests.gateway.mcp_tools import mcp_tool
from tests.mcp_upstream import free_port, mcp_upstream

pytestmark = pytest.mark.django_db


def test_a_server_of_2026_07_28_is_spoken_to_on_it(api, agent, shipping, shipping_upstream):
    # given
    mcp_tool(agent, "track_shipment")

    # when: two calls, in two tasks
    bodies = [
        invoke(api, "track_shipment", {"shipment_id": f"s-{n}"}, task_id=f"t-{n}").json() for n in range(2)
    ]

    # then: one discover, no handshake, every request on 2026-07-28
    assert [body["status"] for body in bodies] == ["ok", "ok"]
    assert bodies[1]["data"] == {"shipment_id": "s-1", "status": "in transit"}
    assert shipping.initializes == 1
    assert set(shipping.versions) == {LATEST_MODERN_VERSION}


def test_a_server_of_the_handshake_revisions_gets_the_handshake(api, agent):
    # given: a server from before 2026-07-28
    with mcp_upstream(handshake_only=True) as older:
        UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=older.url)
        mcp_tool(agent, "track_shipment")

        # when
        body = invoke(api, "track_shipment", {"shipment_id": "s-1"}).json()

    # then: the discover it refused, then initialize, and the call on the newest handshake revision
    assert (body["status"], body["data"]["shipment_id"]) == ("ok", "s-1")
    assert older.versions[:2] == [LATEST_MODERN_VERSION, ""]
    assert older.versions[-1] == LATEST_HANDSHAKE_VERSION


def test_on_2026_07_28_a_restart_of_the_server_breaks_nothing(api, agent):
    # given: calls to a server, which then restarts on the same port
    port = free_port()
    with mcp_upstream(port) as first:
        UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=first.url)
        mcp_tool(agent, "track_shipment")
        before = invoke(api, "track_shipment", {"shipment_id": "s-1"}).json()

    with mcp_upstream(port) as restarted:
        # when
        after = invoke(api, "track_shipment", {"shipment_id": "s-2"}, task_id="t-2").json()

    # then: no session to lose, so nothing to make again
    assert (before["status"], after["status"]) == ("ok", "ok"), after
    assert restarted.initializes == 0 and restarted.versions == [LATEST_MODERN_VERSION]
