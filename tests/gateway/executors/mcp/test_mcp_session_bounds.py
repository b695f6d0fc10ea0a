"""What an agent can make ToolHub hold open at an MCP server: sessions are cached per
tenant, URL and credential, at most TOOLHUB_MCP_MAX_SESSIONS of them, each closed (its
sockets released) once it is the least recently used one past the bound or has been idle
for TOOLHUB_MCP_SESSION_IDLE_S."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import pytest

from apps.tenancy.services import agent_key_issue
from tests.factories import AgentFactory, SubjectCredentialFactory, TenantFactory, UpstreamFactory
from tests.gateway.conftest import invoke
from tests.gateway.mcp_tools import mcp_tool
from tests.listeners import open_connections_to
from tests.mcp_upstream import McpUpstream

pytestmark = pytest.mark.django_db


@pytest.fixture
def shipping(shipping: McpUpstream, settings) -> Iterator[McpUpstream]:
    """The root conftest's server, whose sessions are let go before it stops."""
    yield shipping
    # Sessions left open would keep the server from stopping until its shutdown times out.
    settings.TOOLHUB_MCP_SESSION_IDLE_S = 0.05
    _settles(lambda: open_connections_to(_port(shipping)), lambda n: n == 0)


def _port(upstream: McpUpstream) -> int:
    return int(urlsplit(upstream.url).port or 0)


def _settles(count: Callable[[], int], expected: Callable[[int], bool], within_s: float = 5.0) -> int:
    """`count()` once `expected` holds of it, or its last value after `within_s`."""
    deadline = time.monotonic() + within_s
    value = count()
    while not expected(value) and time.monotonic() < deadline:
        time.sleep(0.05)
        value = count()
    return value


def _per_user_upstream(agent, url: str, subjects: list[str]) -> None:
    """acme's upstream `shipping` at `url`, whose key is each end user's own token."""
    upstream = UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=url, credential__per_subject=True)
    for subject in subjects:
        SubjectCredentialFactory(credential=upstream.credential, agent=agent, subject=subject)


def test_sessions_past_the_bound_are_closed_and_their_sockets_released(
    api, agent, shipping, session_for, settings
):
    # given: at most 3 sessions, and 12 end users with their own token each (a session each)
    settings.TOOLHUB_MCP_MAX_SESSIONS = 3
    subjects = [f"u-{n}" for n in range(12)]
    _per_user_upstream(agent, shipping.url, subjects)
    mcp_tool(agent, "track_shipment")

    # when: each user calls once
    bodies = [
        invoke(api, "track_shipment", {"shipment_id": "s-1"}, session=session_for(subject),
               task_id=subject).json()
        for subject in subjects
    ]

    # then: every call was answered on a session of its own user...
    assert [body["status"] for body in bodies] == ["ok"] * 12
    assert shipping.initializes == 12
    # ...and only the 3 most recent sessions still hold connections (a POST and a GET stream each)
    held = _settles(lambda: open_connections_to(_port(shipping)), lambda n: n <= 6)
    assert held <= 6, f"{held} connections still open to the MCP server"


def test_an_idle_session_is_closed(api, agent, shipping, session_for, settings):
    # given: sessions idle for more than half a second are closed
    settings.TOOLHUB_MCP_SESSION_IDLE_S = 0.5
    _per_user_upstream(agent, shipping.url, ["u-1"])
    mcp_tool(agent, "track_shipment")
    first = invoke(api, "track_shipment", {"shipment_id": "s-1"}, session=session_for("u-1")).json()
    assert first["status"] == "ok"
    assert open_connections_to(_port(shipping)) > 0

    # when: nobody calls for a while
    held = _settles(lambda: open_connections_to(_port(shipping)), lambda n: n == 0)

    # then: the session was closed, and a later call opens a new one
    assert held == 0
    again = invoke(api, "track_shipment", {"shipment_id": "s-2"}, session=session_for("u-1"), task_id="t-2")
    assert again.json()["status"] == "ok"
    assert shipping.initializes == 2


def test_two_tenants_never_share_a_session_to_the_same_url(api, agent, shipping):
    # given: acme and globex each name the same MCP server, without a credential
    globex_agent = AgentFactory(tenant=TenantFactory(slug="globex"), name="helper")
    for each in (agent, globex_agent):
        UpstreamFactory(mcp=True, tenant=each.tenant, name="shipping", base_url=shipping.url)
        mcp_tool(each, "track_shipment")
    globex_api = type(api)()
    globex_api.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=globex_agent).secret}")

    # when: both call, twice each
    bodies = [invoke(client, "track_shipment", {"shipment_id": "s-1"}, task_id=f"t-{n}").json()
              for n in range(2) for client in (api, globex_api)]

    # then: one session per tenant, each reused
    assert [body["status"] for body in bodies] == ["ok"] * 4
    assert shipping.initializes == 2


def test_a_session_is_not_closed_under_a_call_that_has_it(api, agent, shipping, shipping_upstream, settings):
    # given: sessions idle for a twentieth of a second are closed, and a write the server takes
    # a second to answer (sent from the calling thread, the session lent to it meanwhile)
    mcp_tool(agent, "schedule_pickup", side_effect="write", timeout_s=5)
    settings.TOOLHUB_MCP_SESSION_IDLE_S = 0.05
    shipping.pickup_delay_s = 1.0

    # when
    body = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()

    # then: its session stayed open until it answered; the write is applied, once, and known
    assert body["status"] == "ok", body
    assert shipping.pickups == ["s-1"]
    assert shipping.initializes == 1
