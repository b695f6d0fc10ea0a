"""Names belong to a tenant (issue 11, item 5): tenant B's agent never learns tenant A's
toolsets, phases or tools from an error, and B may use a name A already uses; neither may
shadow the shared catalog."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from apps.catalog.models import Tool, Toolset, ToolsetPhase
from apps.catalog.selectors import catalog_findings
from apps.catalog.services import tool_save
from apps.tenancy.models import Agent, Grant, Tenant
from apps.tenancy.services import agent_key_issue
from tests.admin.conftest import logged_in, staff_user
from tests.catalog.factories import published
from tests.factories import AgentFactory, TenantFactory, ToolFactory
from tests.gateway.callables import RUNS

pytestmark = pytest.mark.django_db


def agent_client(agent: Agent) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=agent).secret}")


def invoke(client: Client, name: str, **where: str):
    body = {"task_id": "t-1", "call": {"id": "call_1", "name": name, "arguments": {"query": "ORD-000008"}},
            **where}
    return client.post("/api/v1/invoke", json.dumps(body), content_type="application/json")


def granted_tool(tenant: Tenant | None, agent: Agent, name: str, callable_: str) -> Tool:
    """A tool of `tenant`, published with the given test executor and granted to `agent`."""
    tool = ToolFactory(name=name, tenant=tenant)
    published(tool=tool, number=1, executor_config={"callable": callable_},
              description=f"{name} of {agent.tenant.slug}. At most 20 results. Not for browsing.")
    Grant.objects.create(tenant=agent.tenant, agent=agent, tool=tool)
    return tool


def add_tool_in_admin(staff: Client, name: str, *, summary: str = ""):
    """A curator's POST of the admin's "add tool" form, without versions."""
    return staff.post(reverse("admin:catalog_tool_add"), {
        "name": name, "tenant": "", "summary": summary,
        "versions-TOTAL_FORMS": 0, "versions-INITIAL_FORMS": 0,
    })


def name_refused_in_admin(agent: Agent, name: str) -> list[str]:
    """Why the admin refuses a tool of that name to a curator of the agent's tenant."""
    refused = add_tool_in_admin(logged_in(staff_user("curator", tenant=agent.tenant)), name)
    assert refused.status_code == 200
    return refused.context["adminform"].form.errors["name"]


def toolset_of(tenant: Tenant | None, name: str, phases: list[str], tools: list[Tool] = ()) -> Toolset:
    toolset = Toolset.objects.create(name=name, tenant=tenant)
    toolset.tools.set(tools)
    for phase in phases:
        ToolsetPhase.objects.create(toolset=toolset, name=phase).tools.set(tools)
    return toolset


@pytest.fixture
def acme() -> Agent:
    return AgentFactory(tenant=TenantFactory(slug="acme"), name="acme-bot")


@pytest.fixture
def globex() -> Agent:
    return AgentFactory(tenant=TenantFactory(slug="globex"), name="globex-bot")


def test_an_unknown_toolset_names_only_the_callers_and_the_shared_toolsets(acme, globex):
    toolset_of(acme.tenant, "acme_refund_desk", ["lookup"])
    toolset_of(globex.tenant, "support", ["triage"])
    toolset_of(None, "shared_help", ["faq"])

    listed = agent_client(globex).get("/api/v1/tools", {"toolset": "nope"})
    called = invoke(agent_client(globex), "anything", toolset="nope")

    assert listed.status_code == 400 and called.json()["kind"] == "invalid_args"
    for response in (listed, called):
        assert response.json()["hint"] == "Known toolsets: shared_help, support."
        assert "acme" not in response.content.decode()


def test_an_unknown_phase_names_only_the_phases_of_the_callers_toolset(acme, globex):
    # Both tenants may now call a toolset `support`; each agent sees its own.
    toolset_of(acme.tenant, "support", ["lookup", "resolve", "secret_refunds"])
    toolset_of(globex.tenant, "support", ["triage"])

    listed = agent_client(globex).get("/api/v1/tools", {"toolset": "support", "phase": "lookup"})
    called = invoke(agent_client(globex), "anything", toolset="support", phase="resolve")

    assert listed.status_code == 400 and called.json()["kind"] == "invalid_args"
    for response in (listed, called):
        assert response.json()["hint"] == "Its phases: triage."
        assert "secret_refunds" not in response.content.decode()


def test_a_shared_toolset_never_lists_another_tenants_tool_as_the_callers(acme, globex):
    acme_tool = granted_tool(acme.tenant, acme, "acme_ledger_export", "tests.echo")
    toolset_of(None, "shared_help", ["faq"], tools=[acme_tool])  # as stored before toolsets had owners

    response = invoke(agent_client(globex), "acme_ledger_exprt", toolset="shared_help", phase="faq")

    assert response.json()["kind"] == "unknown_tool"
    assert "acme" not in response.json()["hint"]


def test_another_tenant_creates_its_own_refund_payment_and_calling_it_runs_its_own(acme, globex):
    granted_tool(acme.tenant, acme, "refund_payment", "tests.reject")
    globex_staff = logged_in(staff_user("globex-staff", tenant=globex.tenant))

    created = add_tool_in_admin(globex_staff, "refund_payment", summary="globex refunds")

    assert created.status_code == 302, created.context["adminform"].errors if created.context else ""
    tool = Tool.objects.get(name="refund_payment", tenant=globex.tenant)
    published(tool=tool, number=1, description="Refunds of globex. At most one per call.")
    Grant.objects.create(tenant=globex.tenant, agent=globex, tool=tool)

    envelope = invoke(agent_client(globex), "refund_payment").json()

    assert (envelope["status"], envelope["tool"]) == ("ok", "refund_payment")
    assert envelope["data"] == {"echo": {"query": "ORD-000008"}}
    assert RUNS == {"tests.echo": 1}, "acme's refund_payment (tests.reject) must not run"
    assert invoke(agent_client(acme), "refund_payment").json()["kind"] == "business_rule"


def test_a_tenants_tool_cannot_shadow_a_shared_one(globex):
    ToolFactory(name="search_orders")

    assert name_refused_in_admin(globex, "search_orders") == [
        "The shared catalog already has a tool named search_orders, which this tenant's agents see; "
        "choose another name."
    ]
    assert not Tool.objects.filter(tenant=globex.tenant).exists()


def test_a_shared_tool_cannot_take_a_name_a_tenant_uses(globex):
    ToolFactory(name="refund_payment", tenant=globex.tenant)
    root = logged_in(User.objects.create_superuser("root", password="pw"))

    refused = root.post(reverse("admin:catalog_tool_add"), {
        "name": "refund_payment", "tenant": "", "summary": "",
        "versions-TOTAL_FORMS": 0, "versions-INITIAL_FORMS": 0,
    })

    assert refused.status_code == 200
    assert "would shadow it for that tenant's agents" in refused.context["adminform"].form.errors["name"][0]
    with pytest.raises(ValidationError, match="would shadow"):
        tool_save(tool=Tool(name="refund_payment"), actor="test")
    assert Tool.objects.filter(name="refund_payment").count() == 1


def test_names_are_unique_within_a_tenant_and_toolsets_follow_the_same_rule(globex):
    ToolFactory(name="refund_payment", tenant=globex.tenant)
    Toolset.objects.create(name="support")

    with pytest.raises(ValidationError, match="already has one of that name"):
        tool_save(tool=Tool(name="refund_payment", tenant=globex.tenant), actor="test")
    with pytest.raises(ValidationError, match="shared catalog already has a toolset named support"):
        Toolset(name="support", tenant=globex.tenant).full_clean()


def test_a_tool_is_replaced_only_by_a_tool_its_agents_may_see(acme, globex):
    acme_tool = ToolFactory(name="refund_payment", tenant=acme.tenant)
    retiring = ToolFactory(name="refund_order", tenant=globex.tenant)

    retiring.replaced_by = acme_tool
    with pytest.raises(ValidationError, match="refund_payment belongs to another tenant"):
        tool_save(tool=retiring, actor="test")


def test_a_toolset_holds_only_tools_its_owners_agents_may_call(acme, globex):
    acme_tool = ToolFactory(name="acme_tool", tenant=acme.tenant)
    root = logged_in(User.objects.create_superuser("root", password="pw"))

    refused = root.post(reverse("admin:catalog_toolset_add"), {
        "name": "support", "tenant": globex.tenant.pk, "description": "", "tools": [acme_tool.pk],
        "phases-TOTAL_FORMS": 0, "phases-INITIAL_FORMS": 0,
    })

    assert refused.status_code == 200
    assert refused.context["adminform"].form.errors["tools"] == [
        "A tenant's toolset holds only that tenant's tools and shared ones; remove acme_tool."
    ]
    assert not Toolset.objects.exists()


def test_lint_compares_a_tenants_tool_only_with_tools_its_agents_see_beside_it(acme, globex):
    description = "Refunds part of a paid order to the card it was paid with. At most the order's amount."
    owners = [(acme.tenant, acme, "refund_payment"), (globex.tenant, globex, "give_money_back"),
              (None, acme, "shared_refund")]
    for tenant, agent, name in owners:
        granted_tool(tenant, agent, name, "tests.echo").versions.update(description=description)

    texts = [f"{f.why} {f.fix}" for f in catalog_findings(tenant_id=acme.tenant_id)]

    assert not [t for t in texts if "give_money_back" in t]
    assert [t for t in texts if "shared_refund" in t]  # the control: a neighbour it does see


def test_a_shared_toolsets_phase_cannot_hold_a_tenants_tool(acme):
    acme_tool = ToolFactory(name="acme_tool", tenant=acme.tenant)
    root = logged_in(User.objects.create_superuser("root", password="pw"))

    refused = root.post(reverse("admin:catalog_toolset_add"), {
        "name": "support", "tenant": "", "description": "",
        "phases-TOTAL_FORMS": 1, "phases-INITIAL_FORMS": 0,
        "phases-0-name": "lookup", "phases-0-tools": [acme_tool.pk],
    })

    assert refused.status_code == 200
    assert refused.context["inline_admin_formsets"][0].formset.errors == [{"tools": [
        "A shared toolset holds only shared tools (every tenant's agents see it); remove acme_tool."
    ]}]
    assert not Toolset.objects.exists()


def test_a_tool_cannot_take_the_name_of_a_built_in_tool(globex):
    # a curator of globex adding a tool named like the built-in request_capability is refused,
    # saying why, and neither a tenant's nor a shared tool can take it
    assert name_refused_in_admin(globex, "request_capability") == [
        "request_capability is the name of a tool ToolHub itself offers every agent: a catalog tool "
        "of that name would never be called (the built-in one answers). Choose another name."
    ]
    with pytest.raises(ValidationError, match="ToolHub itself offers every agent"):
        tool_save(tool=Tool(tenant=None, name="request_capability"), actor="admin:root")
    assert not Tool.objects.filter(name="request_capability").exists()


def test_renaming_a_tool_to_a_built_in_name_is_refused(globex):
    tool = tool_save(tool=Tool(tenant=globex.tenant, name="ask_for_more"), actor="curator")
    tool.name = "request_capability"

    with pytest.raises(ValidationError, match="ToolHub itself offers every agent"):
        tool_save(tool=tool, actor="curator")

    assert Tool.objects.get(pk=tool.pk).name == "ask_for_more"
