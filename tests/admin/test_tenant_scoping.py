"""Staff scoped to a tenant see only that tenant; staff without a scope see nothing of any."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.catalog.models import Tool
from apps.tenancy.models import Grant

pytestmark = pytest.mark.django_db

# model → how to reach the world's row of one tenant
TENANT_OWNED = {
    "tenancy_tenant": lambda w: w.tenant,
    "tenancy_agent": lambda w: w.agent,
    "tenancy_agentkey": lambda w: w.key,
    "tenancy_grant": lambda w: w.grant,
    "tenancy_tenantpolicy": lambda w: w.policy,
    "catalog_tool": lambda w: w.tool,
    "catalog_toolversion": lambda w: w.version,
    "ledger_ledgerentry": lambda w: w.entry,
    "audit_invocation": lambda w: w.invocation,
    "capabilities_capabilityrequest": lambda w: w.capability,
}


def _tenant_of(obj) -> int:
    if obj._meta.model_name == "tenant":
        return obj.pk
    if obj._meta.model_name == "toolversion":
        return obj.tool.tenant_id
    return obj.tenant_id


@pytest.mark.parametrize("model", TENANT_OWNED)
def test_a_scoped_changelist_shows_only_the_tenants_rows(world, acme_staff, model):
    response = acme_staff.get(reverse(f"admin:{model}_changelist"))

    assert response.status_code == 200
    rows = list(response.context["cl"].result_list)
    own = TENANT_OWNED[model](world.acme)
    assert own in rows
    assert {_tenant_of(row) for row in rows} <= {world.acme.tenant.pk, None}
    assert "globex" not in response.content.decode()


def test_the_scoped_audit_log_shows_only_the_tenants_events(world, acme_staff):
    response = acme_staff.get(reverse("admin:audit_auditevent_changelist"))

    rows = list(response.context["cl"].result_list)
    assert rows and {row.tenant_id for row in rows} == {world.acme.tenant.pk}
    assert "globex" not in response.content.decode()


@pytest.mark.parametrize("model", TENANT_OWNED)
def test_another_tenants_object_by_url_is_not_found(world, acme_staff, model):
    foreign = TENANT_OWNED[model](world.globex)

    response = acme_staff.get(reverse(f"admin:{model}_change", args=[foreign.pk]), follow=True)

    assert response.redirect_chain[-1][0] == reverse("admin:index")
    page = response.content.decode()
    assert "doesn’t exist" in page
    assert "globex-" not in page and "globex_" not in page


@pytest.mark.parametrize("model", ["tenancy_agent", "tenancy_grant", "ledger_ledgerentry"])
def test_another_tenants_object_cannot_be_changed_or_deleted_by_post(world, acme_staff, model):
    foreign = TENANT_OWNED[model](world.globex)

    acme_staff.post(reverse(f"admin:{model}_change", args=[foreign.pk]), {"name": "hijacked"})
    acme_staff.post(reverse(f"admin:{model}_delete", args=[foreign.pk]), {"post": "yes"})

    assert type(foreign).objects.filter(pk=foreign.pk).exists()
    if model == "tenancy_agent":
        foreign.refresh_from_db()
        assert foreign.name == "globex-bot"


def test_related_filters_offer_only_the_tenants_rows(world, acme_staff):
    Grant.objects.create(tenant=world.acme.tenant, tool=world.shared_tool)

    response = acme_staff.get(reverse("admin:tenancy_grant_changelist"))

    filter_titles = [spec.title for spec in response.context["cl"].filter_specs]
    assert "tenant" not in filter_titles
    tool_filter = next(spec for spec in response.context["cl"].filter_specs if spec.title == "tool")
    assert {label for _, label in tool_filter.lookup_choices} == {"acme_tool", "shared_tool"}


def test_fk_choices_are_limited_to_the_tenant(world, acme_staff):
    response = acme_staff.get(reverse("admin:tenancy_grant_add"))

    fields = response.context["adminform"].form.fields
    assert set(fields["agent"].queryset) == {world.acme.agent}
    # shared tools are granted by the platform only (test_shared_tool_grants.py)
    assert set(fields["tool"].queryset) == {world.acme.tool}
    assert set(fields["pinned_version"].queryset) == {world.acme.version}
    assert fields["tenant"].disabled
    assert set(fields["tenant"].queryset) == {world.acme.tenant}
    assert "globex" not in response.content.decode()


def test_a_grant_naming_another_tenants_agent_is_refused(world, acme_staff):
    response = acme_staff.post(reverse("admin:tenancy_grant_add"), {
        "agent": world.globex.agent.pk, "tool": world.acme.tool.pk,
    })

    assert response.status_code == 200
    assert "Select a valid choice" in str(response.context["adminform"].form.errors["agent"])
    assert not Grant.objects.filter(tool=world.acme.tool, agent=world.globex.agent).exists()


def test_the_tenant_of_a_new_row_is_always_the_scoped_users(
    world, acme_staff, django_capture_on_commit_callbacks
):
    # given a hand-made POST naming the other tenant
    with django_capture_on_commit_callbacks(execute=True):
        response = acme_staff.post(reverse("admin:tenancy_grant_add"), {
            "tenant": world.globex.tenant.pk, "tool": world.acme.tool.pk,
        })

    # then the grant is created for the user's own tenant
    assert response.status_code == 302
    grant = Grant.objects.get(tool=world.acme.tool, agent__isnull=True)
    assert grant.tenant == world.acme.tenant


def test_shared_tools_are_visible_but_read_only_for_scoped_staff(world, acme_staff):
    shared = reverse("admin:catalog_tool_change", args=[world.shared_tool.pk])

    page = acme_staff.get(shared)
    refused = acme_staff.post(shared, {"name": "renamed", "summary": "mine now"})

    assert page.status_code == 200
    assert page.context["has_change_permission"] is False
    assert refused.status_code == 403
    assert Tool.objects.get(pk=world.shared_tool.pk).name == "shared_tool"
    own = acme_staff.get(reverse("admin:catalog_tool_change", args=[world.acme.tool.pk]))
    assert own.context["has_change_permission"] is True


def test_scoped_staff_create_tools_for_their_tenant_only(world, acme_staff):
    response = acme_staff.post(reverse("admin:catalog_tool_add"), {
        "name": "acme_new_tool", "tenant": "", "summary": "", "versions-TOTAL_FORMS": 0,
        "versions-INITIAL_FORMS": 0,
    })

    assert response.status_code == 302
    assert Tool.objects.get(name="acme_new_tool").tenant == world.acme.tenant


@pytest.mark.parametrize("model", [*TENANT_OWNED, "audit_auditevent"])
def test_staff_without_a_scope_see_nothing_tenant_owned(world, unscoped_staff, model):
    response = unscoped_staff.get(reverse(f"admin:{model}_changelist"))

    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == []


def test_staff_without_a_scope_cannot_add_tenant_owned_rows(world, unscoped_staff):
    assert unscoped_staff.get(reverse("admin:tenancy_grant_add")).status_code == 403


@pytest.mark.parametrize("model", TENANT_OWNED)
def test_superusers_see_every_tenant(world, superuser, model):
    response = superuser.get(reverse(f"admin:{model}_changelist"))

    rows = set(response.context["cl"].result_list)
    assert {TENANT_OWNED[model](world.acme), TENANT_OWNED[model](world.globex)} <= rows


@pytest.mark.parametrize("model", ["catalog_toolset", "demo_shop_demoorder", "tenancy_staffscope"])
def test_global_admins_are_hidden_from_scoped_staff(world, acme_staff, model):
    assert acme_staff.get(reverse(f"admin:{model}_changelist")).status_code == 403


def test_the_admin_index_lists_no_global_models_for_scoped_staff(world, acme_staff):
    page = acme_staff.get(reverse("admin:index")).content.decode()

    assert "Agents" in page
    assert "Toolsets" not in page and "Staff scopes" not in page and "Demo orders" not in page
