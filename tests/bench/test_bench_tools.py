"""The bench-only tool and seed: what `make bench` relies on, minus the stopwatch."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.demo_shop.models import DemoOrder
from apps.demo_shop.services import demo_seed
from apps.tenancy.models import Agent
from apps.tenancy.services import session_mint
from bench.seed import BENCH_USER, ORDER_SLOT_SIZE, WAIT_TOOL, bench_seed, order_id, order_slot

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
