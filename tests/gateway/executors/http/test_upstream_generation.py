"""A governed call of a tool that calls an upstream reads the upstreams' generation with the
task's counters: its executor checks the memo of upstreams without a cache round trip of its
own, and a change saved between two calls is still what the second one reaches."""

from __future__ import annotations

import pytest

from apps.upstreams.models import Upstream as UpstreamRow
from apps.upstreams.services import upstream_save
from tests.factories import UpstreamFactory
from tests.gateway.executors.http.test_http_upstreams import tenant_tool
from tests.http_upstream import Answer, http_upstream

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def call(client, issued):
    """Invoke `order_lookup` with the agent's key (taken on trust from its second call on),
    a new call id each time."""
    numbers = iter(range(1_000))

    def send() -> dict:
        n = next(numbers)
        body = {"task_id": "t-1", "call": {"id": f"c-{n}", "name": "order_lookup",
                                           "arguments": {"order_id": f"o-{n}"}}}
        answer = client.post("/api/v1/invoke", body, content_type="application/json",
                             HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
        return answer.json()

    return send


def test_a_call_of_an_http_tool_with_a_known_key_makes_one_cache_round_trip(agent, call, cache_round_trips):
    with http_upstream() as server:
        server.answer = lambda received: Answer(body={"status": "paid"})
        UpstreamFactory(orders=True, tenant=agent.tenant, base_url=server.url)
        tenant_tool(agent, upstream="orders-api")
        assert call()["status"] == call()["status"] == "ok"  # the key and the upstream known
        before = cache_round_trips[0]

        answer = call()

    assert answer["status"] == "ok"
    assert cache_round_trips[0] - before == 1
    assert server.received[-1].path == "/orders/o-2"


def test_an_upstream_moved_between_two_calls_is_where_the_second_call_goes(agent, call):
    with http_upstream() as old, http_upstream() as new:
        for server in (old, new):
            server.answer = lambda received: Answer(body={"status": "paid"})
        UpstreamFactory(orders=True, tenant=agent.tenant, base_url=old.url)
        tenant_tool(agent, upstream="orders-api")
        assert call()["status"] == call()["status"] == "ok"

        upstream = UpstreamRow.objects.get(tenant=agent.tenant, name="orders-api")
        upstream.base_url = new.url
        upstream_save(upstream=upstream, actor="test")
        answer = call()

    assert answer["status"] == "ok"
    assert [r.path for r in old.received] == ["/orders/o-0", "/orders/o-1"]
    assert [r.path for r in new.received] == ["/orders/o-2"]
