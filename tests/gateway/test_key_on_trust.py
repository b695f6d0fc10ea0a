"""Invoke takes a key this process knows on trust and checks it with the task's counters,
in the same cache round trip (apps/tenancy/authentication.py, KeyCheck): whatever changes
the key or the catalog is seen by the very next request."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from apps.audit.models import Invocation
from apps.capabilities.models import CapabilityRequest
from apps.common.catalog_generation import catalog_changed
from apps.tenancy.models import TenantPolicy
from apps.tenancy.services import agent_key_cache_key, agent_key_revoke, agent_save
from tests.gateway.callables import RUNS

pytestmark = pytest.mark.django_db(transaction=True)

LOOKUP = '{"query": "x"}'


@pytest.fixture
def call(client, issued, session_for):
    """Invoke `lookup` (or `name`) with the agent's key, a new call id each time."""
    session = session_for("u-1")
    numbers = iter(range(1_000))

    def send(name: str = "lookup", *, task_id: str = "t-1"):
        body = {"task_id": task_id, "call": {"id": f"c-{next(numbers)}", "name": name, "arguments": LOOKUP}}
        return client.post("/api/v1/invoke", body, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {issued.secret}", HTTP_X_TOOLHUB_SESSION=session)

    return send


@pytest.fixture
def known(call, publish_tool):
    """`lookup` published and called twice: its key read in full and remembered with the
    catalog generation (which the first call of an empty cache starts)."""
    version = publish_tool("lookup")
    assert call().json()["status"] == call().json()["status"] == "ok"
    RUNS.clear()
    return version


def test_a_call_with_a_known_key_makes_one_cache_round_trip(known, call, cache_round_trips):

    answer = call()

    assert answer.json()["status"] == "ok"
    assert cache_round_trips[0] == 1


def test_a_key_revoked_after_it_was_known_is_refused_on_the_very_next_request(known, call, issued):

    agent_key_revoke(key=issued.key, actor="test")
    refused = call()

    assert refused.status_code == 401 and refused.json()["kind"] == "forbidden"
    assert not RUNS
    assert Invocation.objects.count() == 2


def test_an_unknown_tool_with_a_revoked_key_is_refused_before_anything_is_noted(known, call, issued):

    agent_key_revoke(key=issued.key, actor="test")
    refused = call("no_such_tool")

    assert refused.status_code == 401
    assert not CapabilityRequest.objects.exists()
    assert Invocation.objects.count() == 2


def test_a_deactivated_agent_is_refused_on_the_very_next_request(known, call, agent):

    agent.active = False
    agent_save(agent=agent, actor="test")

    assert call().status_code == 401


def test_a_key_gone_from_the_cache_is_read_again_and_served(known, call, issued):

    cache.delete(agent_key_cache_key(issued.key.prefix))  # expired, or evicted

    assert call().json()["status"] == "ok"
    assert cache.get(agent_key_cache_key(issued.key.prefix))["pk"] == issued.key.pk


@pytest.mark.parametrize(("limit", "tasks", "refused_as"), [
    # The task's budget: two calls of the tool in task t-2.
    ({"task_call_budget": 2}, ("t-2", "t-2", "t-2"), "business_rule"),
    # The agent's rate: `known` made two calls this minute; a limit of 4 leaves room for two more.
    ({"rate_limit_per_minute": 4}, ("t-2", "t-3", "t-4"), "rate_limited"),
])
def test_the_call_that_finds_the_catalog_changed_is_counted_once(
    known, call, agent, limit, tasks, refused_as
):
    TenantPolicy.objects.create(tenant=agent.tenant, tool=known.tool, **limit)
    catalog_changed()
    assert call(task_id=tasks[0]).json()["status"] == "ok"  # the policy read, the key known again

    catalog_changed()
    second = call(task_id=tasks[1])
    third = call(task_id=tasks[2])

    # Counted twice (once on trust, once after), the second would have used up the limit.
    assert second.json()["status"] == "ok"
    assert third.json()["kind"] == refused_as
