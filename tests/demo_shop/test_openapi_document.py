"""The demo payments provider's OpenAPI document: served, true to the endpoints, imported
cleanly, and imported by seed_demo through the importer."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from apps.catalog.models import ToolVersion
from apps.demo_shop.models import DemoRefund
from apps.demo_shop.seed import demo_seed
from apps.imports.openapi_services import openapi_import
from tests.factories import TenantFactory

from .factories import DemoOrderFactory


@pytest.mark.django_db(transaction=True)
def test_the_order_refunds_endpoint_lists_an_orders_refunds_oldest_first(payments):
    DemoOrderFactory(order_id="ORD-000001", amount_cents=5_000)
    DemoOrderFactory(order_id="ORD-000002", amount_cents=5_000)
    for key, amount in (("k-1", 100), ("k-2", 200)):
        payments.post("/refunds", json={"order_id": "ORD-000001", "amount_cents": amount},
                      headers={"Idempotency-Key": key})

    listed = payments.get("/orders/ORD-000001/refunds")
    none = payments.get("/orders/ORD-000002/refunds")
    missing = payments.get("/orders/ORD-999999/refunds")
    anonymous = payments.get("/orders/ORD-000001/refunds", headers={"Authorization": ""})

    assert listed.status_code == 200
    assert [(r["idempotency_key"], r["amount_cents"]) for r in listed.json()] == [("k-1", 100), ("k-2", 200)]
    assert (none.status_code, none.json()) == (200, [])
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "order_not_found")
    assert anonymous.status_code == 401
    assert DemoRefund.objects.count() == 2


@pytest.mark.django_db
def test_the_document_is_served_and_every_operation_imports_without_lint_errors(client):
    response = client.get("/demo/openapi.json")

    assert response.status_code == 200
    document = response.json()
    assert document["servers"] == [{"url": "http://testserver/demo/payments"}]
    # The test client's host (testserver) is no URL an upstream takes: the curator names one.
    report = openapi_import(tenant=TenantFactory(slug="shop"), document_text=response.content,
                            upstream="demo-payments", actor="curator",
                            base_url="http://127.0.0.1:8000/demo/payments")
    assert {r.key: r.outcome for r in report.results} == {
        "createRefund": "new", "getRefundByKey": "new", "listOrderRefunds": "new"
    }
    assert [f"{r.tool}: {f.code}" for r in report.results for f in r.findings if f.is_error] == []
    create = ToolVersion.objects.get(tool__name="create_refund")
    # the documented Idempotency-Key header is the idempotency header, not an argument
    assert create.executor_config == {
        "upstream": "demo-payments", "method": "POST", "path": "/refunds",
        "body": ["order_id", "amount_cents"], "idempotency_header": "Idempotency-Key",
    }


@pytest.mark.django_db
def test_seed_demo_imports_the_order_refunds_listing_as_a_draft_once():
    out = io.StringIO()
    call_command("seed_demo", stdout=out)

    version = ToolVersion.objects.get(tool__name="list_order_refunds")
    assert (version.tool.tenant.slug, version.number, version.status) == ("demo", 1, "draft")
    assert version.executor_config == {
        "upstream": "demo-payments", "method": "GET", "path": "/orders/{order_id}/refunds"
    }
    assert version.parameters["required"] == ["order_id"]
    assert version.source["key"] == "listOrderRefunds"
    assert "imported from /demo/openapi.json as drafts to review: list_order_refunds" in out.getvalue()

    assert demo_seed().imported == ("list_order_refunds",)
    assert ToolVersion.objects.filter(tool__name="list_order_refunds").count() == 1
