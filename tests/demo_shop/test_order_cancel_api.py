"""The shop's ungoverned cancel endpoint: the baseline of the governed write in `make bench`."""

from __future__ import annotations

import pytest
from django.conf import settings

from apps.demo_shop.models import DemoOrder
from apps.demo_shop.tools import cancel_order

from .factories import DemoOrderFactory, execution_request

pytestmark = pytest.mark.django_db

AUTH = {"HTTP_AUTHORIZATION": f"Bearer {settings.TOOLHUB_SECRETS['DEMO_PAYMENTS_API_KEY']}"}


def _cancel(client, headers=AUTH, **body):
    payload = {"user_id": "u-1001", "reason": "customer_request", **body}
    return client.post("/demo/orders/cancel", payload, content_type="application/json", **headers)


def test_it_cancels_the_users_order_and_answers_what_the_tool_answers(client):
    # given two paid orders of the same user
    by_api = DemoOrderFactory(order_id="ORD-000001")
    by_tool = DemoOrderFactory(order_id="ORD-000002")

    # when one is cancelled through the endpoint and the other through the tool's executor
    response = _cancel(client, order_id="ORD-000001")
    tool_result = cancel_order(
        execution_request("cancel_order", user_id="u-1001", order_id="ORD-000002", reason="customer_request")
    )

    # then both made the same write and answer the same shape
    assert response.status_code == 200
    assert response.json() == {**tool_result, "order_id": "ORD-000001"}
    rows = DemoOrder.objects.filter(pk__in=[by_api.pk, by_tool.pk]).values_list("status", "cancel_reason")
    assert set(rows) == {("cancelled", "customer_request")}


def test_without_the_shops_api_key_nothing_is_cancelled(client):
    order = DemoOrderFactory(order_id="ORD-000001")

    response = _cancel(client, headers={"HTTP_AUTHORIZATION": "Bearer wrong"}, order_id="ORD-000001")

    assert response.status_code == 401
    assert response.json()["kind"] == "forbidden"
    order.refresh_from_db()
    assert order.status == "paid"


def test_another_users_order_is_not_found_and_stays_as_it_was(client):
    order = DemoOrderFactory(order_id="ORD-000001", user_id="u-2002")

    response = _cancel(client, order_id="ORD-000001")

    assert response.status_code == 404
    assert response.json()["kind"] == "not_found"
    order.refresh_from_db()
    assert order.status == "paid"


def test_an_order_already_cancelled_answers_conflict(client):
    DemoOrderFactory(order_id="ORD-000001", status="cancelled", cancel_reason="duplicate")

    response = _cancel(client, order_id="ORD-000001")

    assert response.status_code == 409
    assert response.json()["kind"] == "business_rule"
    assert DemoOrder.objects.get(order_id="ORD-000001").cancel_reason == "duplicate"


def test_a_free_text_reason_is_refused_before_anything_changes(client):
    order = DemoOrderFactory(order_id="ORD-000001")

    response = _cancel(client, order_id="ORD-000001", reason="they asked nicely")

    assert response.status_code == 400
    assert response.json()["details"][0]["path"] == "/reason"
    order.refresh_from_db()
    assert order.status == "paid"
