"""The bench-only tool and seed: what `make bench` relies on, minus the stopwatch."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from apps.catalog.models import ToolVersion
from apps.demo_shop.models import DemoOrder, DemoRefund
from apps.demo_shop.seed import demo_seed
from apps.tenancy.models import Agent
from apps.tenancy.services import session_mint
from bench.calls import BARE_IMPORTED, IMPORTED_CALL
from bench.seed import (
    BENCH_USER,
    IMPORTED_TOOL,
    ORDER_SLOT_SIZE,
    REFUNDED_ORDER,
    REFUNDS_LISTED,
    WAIT_TOOL,
    bench_seed,
    order_id,
    order_slot,
)
from bench.static_refunds import static_refunds_upstream
from tests.mcp_upstream import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent_api() -> APIClient:
    seed = demo_seed()
    bench_seed(slots=1)
    agent = Agent.objects.get(name="support-bot")
    token, _ = session_mint(tenant_id=agent.tenant_id, agent_id=agent.pk, subject=BENCH_USER, attributes={},
                            ttl_s=600)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {seed.agent_key}", HTTP_X_TOOLHUB_SESSION=token)
    return client


def test_a_batch_of_bench_waits_answers_every_call_in_order(agent_api):
    calls = [{"id": f"call_{i}", "name": WAIT_TOOL, "arguments": f'{{"ms": 20, "label": "read {i}"}}'}
             for i in range(10)]

    response = agent_api.post("/api/v1/invoke/batch", {"task_id": "t-1", "calls": calls}, format="json")

    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["call_id"] for r in results] == [c["id"] for c in calls]
    assert [r["status"] for r in results] == ["ok"] * 10
    assert [r["data"]["label"] for r in results] == [f"read {i}" for i in range(10)]


# The executor runs on a worker thread with its own connection: it must see committed orders.
@pytest.mark.django_db(transaction=True)
def test_the_bench_users_orders_are_cancellable_through_the_governed_write(agent_api):
    number = order_slot(1) + 42

    response = agent_api.post("/api/v1/invoke", {"task_id": "t-1", "call": {
        "id": "c1", "name": "cancel_order",
        "arguments": f'{{"order_id": "{order_id(number)}", "reason": "customer_request"}}',
    }}, format="json")

    assert response.json()["status"] == "ok"
    assert DemoOrder.objects.get(order_id=order_id(number)).status == "cancelled"
    assert DemoOrder.objects.filter(user_id=BENCH_USER).count() == ORDER_SLOT_SIZE


def test_seeding_twice_adds_nothing(agent_api):
    bench_seed(slots=1)

    assert DemoOrder.objects.filter(user_id=BENCH_USER).count() == ORDER_SLOT_SIZE
    assert Agent.objects.get(name="support-bot").tenant.tools.filter(name=WAIT_TOOL).count() == 1


# The static upstream answers the refunds the provider lists; both sides of the pair call it.
@pytest.mark.urls("bench.urls")
def test_the_imported_tool_and_its_bare_view_list_the_same_refunds(agent_api, client, settings):
    call = json.loads(IMPORTED_CALL)

    with static_refunds_upstream(port=free_port()) as url:
        settings.BENCH_STATIC_UPSTREAM_URL = url
        governed = agent_api.post("/api/v1/invoke", {"task_id": "t-1", "call": call}, format="json").json()
        bare = client.get(BARE_IMPORTED)

    assert governed["status"] == "ok"
    assert bare.status_code == 200
    assert governed["data"] == bare.json()
    assert [r["idempotency_key"] for r in bare.json()] == [f"bench-refund-{n}" for n in range(REFUNDS_LISTED)]
    version = ToolVersion.objects.get(tool__name=IMPORTED_TOOL)
    assert (version.status, version.source["key"]) == ("published", "listOrderRefunds")


def test_seeding_twice_records_the_refunds_once(agent_api):
    bench_seed(slots=1)

    assert DemoRefund.objects.filter(order_id=REFUNDED_ORDER).count() == REFUNDS_LISTED
