"""/mcp takes a key this process knows on trust, as REST invoke does: tools/call checks it
with the task's counters (one cache round trip), every other method and every answer is
behind the check, and whatever changed the key is seen by the very next request."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.cache import cache

from apps.audit.models import Invocation
from apps.capabilities.models import CapabilityRequest
from apps.tenancy.services import agent_key_cache_key, agent_key_revoke, agent_save
from tests.gateway.callables import RUNS

from .test_mcp import SEARCH, initialize
from .test_mcp_modern import modern

pytestmark = pytest.mark.django_db(transaction=True)

UNAUTHORIZED = "Unauthorized: The agent key is unknown or revoked."


@pytest.fixture
def send(client, issued, session_for):
    """POST one JSON-RPC message of the agent's MCP session (None as id: a notification)."""
    session_id = initialize(client, issued.secret)["Mcp-Session-Id"]
    headers = {
        "HTTP_AUTHORIZATION": f"Bearer {issued.secret}",
        "HTTP_MCP_SESSION_ID": session_id,
        "HTTP_X_TOOLHUB_SESSION": session_for("u-1001"),
    }
    numbers = iter(range(1, 1_000))

    def post(method: str, params: dict | None = None, *, notification: bool = False, **extra):
        body = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
        if not notification:
            body["id"] = next(numbers)
        return client.post("/mcp", json.dumps(body), content_type="application/json", **{**headers, **extra})

    return post


@pytest.fixture
def known(send, demo_tools):
    """search_orders called twice: the key read in full and remembered with the catalog
    generation (which the first call of an empty cache starts)."""
    for _ in range(2):
        answer = send("tools/call", {"name": "search_orders", "arguments": SEARCH})
        assert answer.json()["result"]["isError"] is False
    RUNS.clear()


def test_a_tools_call_with_a_known_key_makes_one_cache_round_trip(known, send, cache_round_trips):

    answer = send("tools/call", {"name": "search_orders", "arguments": SEARCH})

    assert answer.json()["result"]["structuredContent"]["status"] == "ok"
    assert cache_round_trips[0] == 1


def test_a_key_revoked_after_it_was_known_is_refused_on_the_very_next_tools_call(known, send, issued):

    agent_key_revoke(key=issued.key, actor="test")
    refused = send("tools/call", {"name": "search_orders", "arguments": SEARCH})

    assert refused.status_code == 401 and refused.json()["error"]["message"] == UNAUTHORIZED
    assert not RUNS
    assert Invocation.objects.count() == 2


def test_an_unknown_tool_with_a_revoked_key_is_refused_before_anything_is_noted(known, send, issued):

    agent_key_revoke(key=issued.key, actor="test")
    refused = send("tools/call", {"name": "no_such_tool", "arguments": {}})

    assert refused.status_code == 401
    assert not CapabilityRequest.objects.exists()
    assert Invocation.objects.count() == 2


@pytest.mark.parametrize(
    "method, params, extra",
    [
        ("tools/list", None, {}),
        ("ping", None, {}),
        ("tasks/get", {"taskId": str(uuid.uuid4())}, {"HTTP_MCP_PROTOCOL_VERSION": "2025-11-25"}),
        ("tools/call", {"name": "search_orders", "arguments": SEARCH}, {"HTTP_MCP_SESSION_ID": ""}),
        ("tools/call", {"arguments": SEARCH}, {}),
        ("tools/call", {"name": "search\u0000orders", "arguments": SEARCH}, {}),
    ],
    ids=["tools/list", "ping", "tasks/get", "a call without its session", "a call without a name", "NUL"],
)
def test_a_revoked_key_is_refused_whatever_the_request_would_have_answered(
    known, send, issued, method, params, extra
):

    agent_key_revoke(key=issued.key, actor="test")
    refused = send(method, params, **extra)

    assert refused.status_code == 401 and refused.json()["error"]["message"] == UNAUTHORIZED
    assert Invocation.objects.count() == 2


def test_a_notification_with_a_revoked_key_is_refused(known, send, issued):

    agent_key_revoke(key=issued.key, actor="test")
    refused = send("notifications/initialized", notification=True)

    assert refused.status_code == 401


def test_a_revoked_key_is_refused_on_the_stateless_revision_too(known, client, issued, session_for):

    agent_key_revoke(key=issued.key, actor="test")
    refused = modern(
        client, "tools/call", {"name": "search_orders", "arguments": SEARCH}, key=issued.secret,
        HTTP_MCP_NAME="search_orders", HTTP_X_TOOLHUB_SESSION=session_for("u-1001"),
    )

    assert refused.status_code == 401 and refused.json()["error"]["message"] == UNAUTHORIZED
    assert not RUNS


def test_a_deactivated_agent_is_refused_on_the_very_next_request(known, send, agent):

    agent.active = False
    agent_save(agent=agent, actor="test")

    assert send("tools/call", {"name": "search_orders", "arguments": SEARCH}).status_code == 401


def test_a_key_gone_from_the_cache_is_read_again_and_served(known, send, issued):

    cache.delete(agent_key_cache_key(issued.key.prefix))  # expired, or evicted
    answer = send("tools/call", {"name": "search_orders", "arguments": SEARCH})

    assert answer.json()["result"]["structuredContent"]["status"] == "ok"
    assert cache.get(agent_key_cache_key(issued.key.prefix))["pk"] == issued.key.pk
