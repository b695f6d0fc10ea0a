"""`manage.py seed_demo`: what it creates, and that a rerun changes nothing."""

from __future__ import annotations

import io
from datetime import date

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db.models import Count, Max, Min
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from apps.audit.models import AuditEvent
from apps.catalog.models import Tool, Toolset, ToolsetPhase, ToolVersion
from apps.demo_shop.models import DemoOrder
from apps.gateway.executors.base import get_reconcile_callable, get_tool_callable
from apps.tenancy.authentication import AgentKeyAuthentication
from apps.tenancy.keys import digest_of, split_key
from apps.tenancy.models import Agent, AgentKey, Grant, Tenant

pytestmark = pytest.mark.django_db

SHIPPING_TOOLS = {"track_shipment", "schedule_pickup", "pickup_status"}

SEARCH_ORDERS_EXPORTED = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["pending", "paid", "cancelled", "all"]},
        "start_date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "end_date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    },
    "required": ["status", "start_date", "end_date", "limit"],
    "additionalProperties": False,
}


def _seed() -> dict[str, str]:
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    return dict(line.split("=", 1) for line in out.getvalue().splitlines() if "=" in line)


def _snapshot() -> dict:
    models = (Tenant, Agent, AgentKey, Grant, Tool, ToolVersion, Toolset, ToolsetPhase,
              DemoOrder, AuditEvent, get_user_model())
    return {
        "counts": {m.__name__: m.objects.count() for m in models},
        "versions": list(ToolVersion.objects.order_by("pk").values()),
        "orders": list(DemoOrder.objects.order_by("pk").values()),
        "phases": sorted(ToolsetPhase.objects.values_list("name", "tools__name")),
        "admin": list(get_user_model().objects.values("password", "is_superuser")),
    }


def _without_bound_fields(version: ToolVersion) -> dict:
    """The schema as the exports show it: bound fields removed, descriptions aside."""
    bound = set(version.context_bindings)
    return {
        **version.parameters,
        "properties": {
            name: {k: v for k, v in prop.items() if k != "description"}
            for name, prop in version.parameters["properties"].items() if name not in bound
        },
        "required": [name for name in version.parameters["required"] if name not in bound],
    }


def test_seed_prints_a_working_admin_login_and_agent_key(client):
    # when
    printed = _seed()

    # then
    assert printed["ADMIN_USER"] == "admin"
    assert client.login(username="admin", password=printed["ADMIN_PASSWORD"])
    key = printed["AGENT_KEY"]
    stored = AgentKey.objects.get(prefix=split_key(key))
    assert stored.digest == digest_of(key)
    assert key not in {stored.prefix, stored.digest}
    request = Request(APIRequestFactory().get("/", HTTP_AUTHORIZATION=f"Bearer {key}"))
    principal, _ = AgentKeyAuthentication().authenticate(request)
    assert (principal.tenant_slug, principal.agent_name) == ("demo", "support-bot")


def test_reseeding_changes_nothing_and_prints_the_same_credentials():
    # given
    first = _seed()
    before = _snapshot()

    # when
    second = _seed()

    # then
    assert second == first
    assert _snapshot() == before


def test_reseeding_keeps_what_the_demo_changed():
    # given
    _seed()
    DemoOrder.objects.filter(order_id="ORD-000001").update(status="cancelled", cancel_reason="other")

    # when
    _seed()

    # then
    order = DemoOrder.objects.get(order_id="ORD-000001")
    assert (order.status, order.cancel_reason) == ("cancelled", "other")


def test_the_admin_password_can_be_set_from_the_environment(settings, client):
    settings.TOOLHUB_ADMIN_PASSWORD = "chosen-by-the-operator"

    printed = _seed()

    assert printed["ADMIN_PASSWORD"] == "chosen-by-the-operator"
    assert client.login(username="admin", password="chosen-by-the-operator")


def test_the_order_book_is_three_users_over_the_first_half_of_2026():
    _seed()

    orders = DemoOrder.objects.all()
    assert orders.count() == 300
    span = orders.aggregate(first=Min("placed_on"), last=Max("placed_on"))
    assert date(2026, 1, 1) <= span["first"] < date(2026, 1, 15)
    assert date(2026, 6, 15) < span["last"] <= date(2026, 6, 30)
    assert set(orders.values_list("user_id", flat=True)) == {"u-1001", "u-2002", "u-3003"}
    by_status = dict(orders.values_list("status").annotate(n=Count("pk")))
    assert set(by_status) == {"pending", "paid", "cancelled"}
    assert orders.order_by("order_id").first().order_id == "ORD-000001"
    assert orders.order_by("order_id").last().order_id == "ORD-000300"
    assert orders.filter(amount_cents__lt=1).count() == 0


def test_the_shop_tools_and_run_python_are_published_granted_and_grouped_in_phases():
    _seed()

    agent = Agent.objects.get(tenant__slug="demo", name="support-bot")
    names = {"search_orders", "get_order", "cancel_order", "refund_payment", "run_python"}
    versions = ToolVersion.objects.filter(tool__name__in=names)
    assert {(v.tool.name, v.number, v.status) for v in versions} == {(n, 1, "published") for n in names}
    assert all(v.published_at is not None for v in versions)
    granted = set(Grant.objects.filter(agent=agent).values_list("tool__name", flat=True))
    assert granted == names | SHIPPING_TOOLS
    toolset = Toolset.objects.get(name="support")
    phases = {p.name: {t.name for t in p.tools.all()} for p in toolset.phases.all()}
    assert phases == {"lookup": {"search_orders", "get_order", "track_shipment"},
                      "resolve": names | SHIPPING_TOOLS}


def test_every_tool_binds_user_id_to_the_session_and_describes_every_parameter():
    _seed()

    # the shop's published tools; the imported draft is a curator's to review
    # (test_openapi_document.py); the shipping server's tools know no user (test_seed_shipping.py),
    # nor does run_python: its code's calls are bound like the model's own (tests/code_mode/)
    for version in ToolVersion.objects.filter(status="published").exclude(executor__in=["mcp", "sandbox"]):
        schema = version.parameters
        assert version.context_bindings == {"user_id": {"source": "session.subject", "policy": "must_match"}}
        assert schema["properties"]["user_id"]["type"] == "string"
        assert "user_id" in schema["required"]
        assert set(schema["required"]) == set(schema["properties"])
        assert schema["additionalProperties"] is False
        assert all(prop.get("description") for prop in schema["properties"].values()), version
        assert "not" in version.description.lower() and len(version.description) > 100


def test_the_exported_search_orders_schema_is_exactly_the_agreed_one():
    _seed()

    version = ToolVersion.objects.get(tool__name="search_orders")

    assert _without_bound_fields(version) == SEARCH_ORDERS_EXPORTED
    assert version.side_effect == "readonly"
    assert version.max_chars == 4000
    assert version.normalizers == {"status": ["trim", "lower"], "start_date": ["date"], "end_date": ["date"]}
    assert {r["type"]: r.get("max_days") for r in version.rules} == {"date_order": None, "max_span": 90}
    assert "does not mean the user has no orders" in version.empty_meaning


def test_the_write_tools_are_declared_as_writes_with_their_executors():
    _seed()

    cancel = ToolVersion.objects.get(tool__name="cancel_order")
    refund = ToolVersion.objects.get(tool__name="refund_payment")
    assert (cancel.side_effect, cancel.executor, cancel.timeout_s) == ("write", "python", 5.0)
    assert cancel.parameters["properties"]["reason"]["enum"] == [
        "customer_request", "duplicate", "fraud_suspected", "other"
    ]
    assert (refund.side_effect, refund.executor, refund.timeout_s) == ("write", "http", 3.0)
    assert refund.executor_config == {
        "url_setting": "TOOLHUB_DEMO_PAYMENTS_URL", "path": "/refunds", "status_path": "/refunds",
        "secret_ref": "DEMO_PAYMENTS_API_KEY",
    }
    assert refund.parameters["properties"]["amount_cents"]["minimum"] == 1
    for version in ToolVersion.objects.filter(executor="python"):
        assert get_tool_callable(version.executor_config["callable"]) is not None
    assert get_reconcile_callable(cancel.executor_config["reconcile"]) is not None


def test_the_refund_tool_that_uses_the_platforms_payments_key_is_a_shared_tool():
    _seed()

    owners = dict(Tool.objects.values_list("name", "tenant__slug"))
    assert owners == {
        "search_orders": "demo", "get_order": "demo", "cancel_order": "demo", "refund_payment": None,
        "run_python": "demo", "list_order_refunds": "demo",  # imported from the provider's OpenAPI document
        **{name: "demo" for name in SHIPPING_TOOLS},  # the tenant's MCP server's
    }
    agent = Agent.objects.get(tenant__slug="demo", name="support-bot")
    assert Grant.objects.filter(agent=agent, tool__name="refund_payment").exists()


def test_a_refund_tool_seeded_as_the_tenants_by_an_earlier_release_moves_to_the_shared_catalog():
    # given: the ownership an earlier seed gave it (its version saved before the rule existed)
    _seed()
    Tool.objects.filter(name="refund_payment").update(tenant=Tenant.objects.get(slug="demo"))

    # when
    _seed()

    # then
    assert Tool.objects.get(name="refund_payment").tenant_id is None
    assert AuditEvent.objects.filter(action="tool.update", data__name="refund_payment").exists()
