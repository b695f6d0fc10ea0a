"""Grants, tenant policies and tools: validated, audited, and seen by the gateway at once."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from apps.audit.models import AuditEvent
from apps.catalog.models import VersionStatus
from apps.catalog.selectors import tools_visible_to_tenant, version_latest_published
from apps.catalog.services import tool_save
from apps.common.catalog_generation import catalog_generation
from apps.tenancy.models import Grant, TenantPolicy
from apps.tenancy.services import grant_delete, grant_save, tenant_policy_delete, tenant_policy_save
from tests.factories import AgentFactory, TenantFactory, ToolFactory, ToolVersionFactory

from .factories import published

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme():
    return TenantFactory(slug="acme")


def test_saving_and_deleting_a_grant_is_audited_and_bumps_the_generation(
    acme, tool, django_capture_on_commit_callbacks
):
    start = catalog_generation()

    with django_capture_on_commit_callbacks(execute=True):
        grant = grant_save(grant=Grant(tenant=acme, tool=tool), actor="curator", by_platform=True)
    after_save = catalog_generation()
    with django_capture_on_commit_callbacks(execute=True):
        grant_delete(grant=grant, actor="curator")

    assert start < after_save < catalog_generation()
    assert not Grant.objects.exists()
    events = AuditEvent.objects.order_by("at")
    assert [(e.action, e.tenant_id, e.data["tool"]) for e in events] == [
        ("grant.create", acme.pk, "search_orders"), ("grant.delete", acme.pk, "search_orders"),
    ]


def test_the_generation_does_not_move_before_commit(acme, tool, django_capture_on_commit_callbacks):
    start = catalog_generation()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        grant_save(grant=Grant(tenant=acme, tool=tool), actor="curator", by_platform=True)
        assert catalog_generation() == start

    assert len(callbacks) == 1


@pytest.mark.parametrize(
    "make, field, message",
    [
        (lambda t, acme: {"agent": AgentFactory(name="spy")}, "agent", "belongs to another tenant"),
        (lambda t, acme: {"tool": ToolFactory(tenant=TenantFactory())}, "tool", "belongs to another tenant"),
        (lambda t, acme: {"pinned_version": published(tool=ToolFactory(name="other_tool"))},
         "pinned_version", "is a version of other_tool, not of search_orders"),
        (lambda t, acme: {"pinned_version": ToolVersionFactory(tool=t, number=7)},
         "pinned_version", "Version 7 is draft; pin a published"),
    ],
    ids=["agent of another tenant", "tool of another tenant", "pin of another tool", "pin of a draft"],
)
def test_inconsistent_grants_are_refused_on_the_field(acme, tool, make, field, message):
    with pytest.raises(ValidationError) as refused:
        grant = Grant(**{"tenant": acme, "tool": tool, **make(tool, acme)})
        grant_save(grant=grant, actor="curator", by_platform=True)

    assert message in refused.value.message_dict[field][0]
    assert not Grant.objects.exists()
    assert not AuditEvent.objects.exists()


def test_a_duplicate_grant_is_refused_not_crashed(acme, tool):
    grant_save(grant=Grant(tenant=acme, tool=tool), actor="curator", by_platform=True)

    with pytest.raises(ValidationError, match="already has a grant of this tool for all its agents"):
        grant_save(grant=Grant(tenant=acme, tool=tool), actor="curator", by_platform=True)
    assert Grant.objects.count() == 1


def test_a_grant_may_pin_a_published_version_of_a_shared_tool(acme, tool):
    version = published(tool=tool)

    grant = grant_save(
        grant=Grant(tenant=acme, tool=tool, pinned_version=version), actor="c", by_platform=True
    )

    assert grant.pinned_version == version


def test_only_the_platform_grants_a_shared_tool(acme, tool):
    # given acme's own tool and the shared search_orders
    own = ToolFactory(name="own_search", tenant=acme)

    # when acme's staff grant both
    own_grant = grant_save(grant=Grant(tenant=acme, tool=own), actor="admin:acme-curator", by_platform=False)
    with pytest.raises(ValidationError) as refused:
        grant_save(grant=Grant(tenant=acme, tool=tool), actor="admin:acme-curator", by_platform=False)

    # then their own is granted, recorded as theirs; the shared one is refused, nothing written
    assert (own_grant.granted_by, own_grant.granted_by_platform) == ("admin:acme-curator", False)
    assert "search_orders is a shared tool: only the platform (a superuser) grants shared tools" in (
        refused.value.message_dict["tool"][0]
    )
    assert not Grant.objects.filter(tool=tool).exists()
    assert list(AuditEvent.objects.values_list("data__tool", flat=True)) == ["own_search"]


def test_a_tenant_cannot_change_the_platforms_grant_of_a_shared_tool(acme, tool):
    grant = grant_save(grant=Grant(tenant=acme, tool=tool), actor="admin:root", by_platform=True)
    grant.pinned_version = published(tool=tool)

    with pytest.raises(ValidationError, match="only the platform"):
        grant_save(grant=grant, actor="admin:acme-curator", by_platform=False)

    grant.refresh_from_db()
    assert (grant.pinned_version, grant.granted_by, grant.granted_by_platform) == (None, "admin:root", True)


def test_policies_are_validated_audited_and_bump_the_generation(acme, django_capture_on_commit_callbacks):
    start = catalog_generation()
    with pytest.raises(ValidationError) as refused:
        tenant_policy_save(policy=TenantPolicy(tenant=acme, rule_overrides={"max_spam": {}}), actor="c")
    assert "Unknown rule types: max_spam" in refused.value.message_dict["rule_overrides"][0]

    with django_capture_on_commit_callbacks(execute=True):
        policy = tenant_policy_save(
            policy=TenantPolicy(tenant=acme, rate_limit_per_minute=30,
                                rule_overrides={"max_span": {"max_days": 31}}),
            actor="c",
        )
        tenant_policy_delete(policy=policy, actor="c")

    assert catalog_generation() > start
    assert list(AuditEvent.objects.order_by("at").values_list("action", flat=True)) == [
        "tenant_policy.create", "tenant_policy.delete",
    ]


def test_tools_visible_to_a_tenant_are_the_shared_ones_and_its_own(acme):
    shared = ToolFactory(name="shared_tool")
    own = ToolFactory(name="own_tool", tenant=acme)
    ToolFactory(name="foreign_tool", tenant=TenantFactory())

    assert set(tools_visible_to_tenant(tenant=acme)) == {shared, own}
    assert set(tools_visible_to_tenant(tenant=acme.pk)) == {shared, own}


def test_latest_published_ignores_drafts_and_deprecated(tool):
    published(tool=tool, number=1)
    second = published(tool=tool, number=2)
    ToolVersionFactory(tool=tool, number=3)
    fourth = published(tool=tool, number=4)
    fourth.status = VersionStatus.DEPRECATED
    fourth.save()

    assert version_latest_published(tool=tool) == second
    assert version_latest_published(tool=ToolFactory()) is None


def test_tool_save_audits_with_the_owner(acme, django_capture_on_commit_callbacks):
    start = catalog_generation()
    with django_capture_on_commit_callbacks(execute=True):
        tool = tool_save(tool=ToolFactory.build(name="refund_order", tenant=acme), actor="curator")

    assert catalog_generation() > start
    event = AuditEvent.objects.get(action="tool.create")
    assert (event.tenant_id, event.target_id) == (acme.pk, str(tool.pk))
