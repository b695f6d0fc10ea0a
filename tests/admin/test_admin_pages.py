"""Every admin page renders, lists without N+1 queries, and keeps records read-only."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.capabilities.models import CapabilityRequest
from apps.catalog.models import Toolset
from apps.common.catalog_generation import catalog_generation
from apps.demo_shop.models import DemoOrder, DemoRefund
from apps.ledger.models import LedgerEntry
from apps.tenancy.models import TenantPolicy
from apps.tenancy.services import agent_key_issue
from tests.factories import ToolVersionFactory

from .conftest import build_tenant_world

pytestmark = pytest.mark.django_db

CHANGELISTS = [
    "tenancy_tenant", "tenancy_agent", "tenancy_agentkey", "tenancy_grant", "tenancy_tenantpolicy",
    "tenancy_staffscope", "catalog_tool", "catalog_toolversion", "catalog_toolset", "ledger_ledgerentry",
    "ledger_triageentry", "ledger_coderun", "ledger_approval", "ledger_pendingapproval",
    "audit_auditevent", "audit_invocation", "capabilities_capabilityrequest", "demo_shop_demoorder",
    "demo_shop_demorefund",
]
READ_ONLY = ["ledger_ledgerentry", "audit_auditevent", "audit_invocation"]


def _demo_rows(n: int) -> None:
    for i in range(n):
        DemoOrder.objects.create(order_id=f"o-{n}-{i}", user_id="u-1", status="paid", amount_cents=100,
                                 placed_on="2026-01-01")
        DemoRefund.objects.create(refund_id=f"r-{n}-{i}", idempotency_key=f"k-{n}-{i}", order_id="o",
                                  amount_cents=1)


def _queries(client, url: str) -> int:
    client.get(url)  # warm per-process caches (content types, templates) before counting
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


@pytest.mark.parametrize("model", CHANGELISTS)
def test_changelists_cost_the_same_queries_for_more_rows(world, superuser, model):
    url = reverse(f"admin:{model}_changelist")
    Toolset.objects.create(name="support").tools.add(world.acme.tool)
    _demo_rows(1)
    few = _queries(superuser, url)

    for slug in ("initech", "umbrella", "hooli"):
        build_tenant_world(slug)
    Toolset.objects.create(name="sales").tools.add(world.globex.tool)
    _demo_rows(3)

    assert _queries(superuser, url) == few


@pytest.mark.parametrize(
    "model", ["tenancy_agent", "catalog_tool", "ledger_ledgerentry", "catalog_toolversion"]
)
def test_change_pages_cost_the_same_queries_for_more_children(world, superuser, model):
    objects = {"tenancy_agent": world.acme.agent, "catalog_tool": world.acme.tool,
               "ledger_ledgerentry": world.acme.entry, "catalog_toolversion": world.acme.version}
    url = reverse(f"admin:{model}_change", args=[objects[model].pk])
    few = _queries(superuser, url)

    for number in (2, 3, 4):
        agent_key_issue(agent=world.acme.agent)
        ToolVersionFactory(tool=world.acme.tool, number=number)
        world.acme.entry.events.create(to_state="committed", actor="gateway")

    assert _queries(superuser, url) == few


@pytest.mark.parametrize("model", READ_ONLY)
def test_ledger_and_audit_are_read_only_even_for_superusers(world, superuser, model):
    obj = {"ledger_ledgerentry": world.acme.entry, "audit_invocation": world.acme.invocation,
           "audit_auditevent": AuditEvent.objects.filter(tenant=world.acme.tenant).first()}[model]
    change = reverse(f"admin:{model}_change", args=[obj.pk])

    page = superuser.get(change)

    assert page.status_code == 200
    assert page.context["adminform"].form.fields == {}
    assert superuser.post(change, {"note": "edited"}).status_code == 403
    assert superuser.get(reverse(f"admin:{model}_add")).status_code == 403
    assert superuser.post(reverse(f"admin:{model}_delete", args=[obj.pk]), {"post": "yes"}).status_code == 403
    assert type(obj).objects.filter(pk=obj.pk).exists()


def test_a_ledger_entry_shows_its_timeline_and_arguments(world, acme_staff):
    page = acme_staff.get(reverse("admin:ledger_ledgerentry_change", args=[world.acme.entry.pk]))

    html = page.content.decode()
    assert "acme intent" in html
    assert "acme-secret-argument" in html
    assert LedgerEntry.objects.get(pk=world.acme.entry.pk).state == "intent"


def test_capability_requests_change_only_through_the_status_actions(world, acme_staff):
    capability = world.acme.capability
    url = reverse("admin:capabilities_capabilityrequest_change", args=[capability.pk])

    acme_staff.post(url, {"status": "planned", "name": "renamed", "count": 999})
    unchanged = CapabilityRequest.objects.get(pk=capability.pk)
    acme_staff.post(
        reverse("admin:capabilities_capabilityrequest_changelist"),
        {"action": "mark_planned", "_selected_action": [capability.pk]},
    )

    capability.refresh_from_db()
    assert (unchanged.status, unchanged.name, unchanged.count) == ("open", "acme_wish", 2)
    assert (capability.status, capability.name, capability.count) == ("planned", "acme_wish", 2)
    assert acme_staff.get(reverse("admin:capabilities_capabilityrequest_add")).status_code == 403


def test_a_capability_can_only_be_fulfilled_by_a_visible_tool(world, acme_staff):
    response = acme_staff.post(
        reverse("admin:capabilities_capabilityrequest_changelist"),
        {"action": "mark_fulfilled", "_selected_action": [world.acme.capability.pk], "apply": "1",
         "fulfilled_by": world.globex.tool.pk},
    )

    assert response.status_code == 200
    assert "fulfilled_by" in response.context["form"].errors
    assert CapabilityRequest.objects.get(pk=world.acme.capability.pk).status == "open"


def test_a_policy_saved_in_the_admin_is_validated_audited_and_seen_by_the_gateway(
    world, acme_staff, django_capture_on_commit_callbacks
):
    generation = catalog_generation()
    url = reverse("admin:tenancy_tenantpolicy_add")
    base = {"tool": world.acme.tool.pk, "task_call_budget": 5}

    refused = acme_staff.post(url, {**base, "rule_overrides": '{"max_spam": {}}'})
    with django_capture_on_commit_callbacks(execute=True):
        accepted = acme_staff.post(url, {**base, "rule_overrides": '{"max_span": {"max_days": 31}}'})

    assert "Unknown rule types: max_spam" in str(refused.context["adminform"].form.errors["rule_overrides"])
    assert accepted.status_code == 302
    policy = TenantPolicy.objects.get(tool=world.acme.tool)
    assert (policy.tenant, policy.task_call_budget) == (world.acme.tenant, 5)
    assert catalog_generation() > generation
    assert AuditEvent.objects.get(action="tenant_policy.create").actor == "admin:acme-staff"


def test_a_grant_deleted_in_the_admin_is_audited(world, acme_staff, django_capture_on_commit_callbacks):
    generation = catalog_generation()

    with django_capture_on_commit_callbacks(execute=True):
        acme_staff.post(reverse("admin:tenancy_grant_delete", args=[world.acme.grant.pk]), {"post": "yes"})

    assert AuditEvent.objects.get(action="grant.delete").data["tool"] == "acme_tool"
    assert catalog_generation() > generation


def test_saving_a_toolset_with_phases_invalidates_the_catalog(
    world, superuser, django_capture_on_commit_callbacks
):
    generation = catalog_generation()

    with django_capture_on_commit_callbacks(execute=True):
        response = superuser.post(reverse("admin:catalog_toolset_add"), {
            "name": "support", "tenant": world.acme.tenant.pk, "description": "",
            "tools": [world.acme.tool.pk],
            "phases-TOTAL_FORMS": 1, "phases-INITIAL_FORMS": 0,
            "phases-0-name": "lookup", "phases-0-tools": [world.acme.tool.pk],
        })

    assert response.status_code == 302
    toolset = Toolset.objects.get(name="support")
    assert [p.name for p in toolset.phases.all()] == ["lookup"]
    assert catalog_generation() > generation
    assert AuditEvent.objects.filter(action="toolset.create").exists()
