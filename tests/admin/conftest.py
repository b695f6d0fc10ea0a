"""Two tenants with one of everything, and admin users of every kind.

`acme` and `globex` each own an agent with a key, a tool with a published version, a grant,
a policy, a ledger entry with an event, an invocation and a capability request; one shared
tool (no tenant) is visible to both.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from apps.audit.models import Invocation
from apps.capabilities.models import CapabilityRequest
from apps.catalog.models import Tool, ToolVersion
from apps.ledger.models import LedgerEntry, LedgerEvent
from apps.tenancy.models import Agent, AgentKey, Grant, StaffScope, Tenant, TenantPolicy
from apps.tenancy.services import agent_key_issue
from tests.catalog.factories import published
from tests.factories import AgentFactory, TenantFactory, ToolFactory

# The invoke API's fixtures, for admin tests that drive real calls (triage, approvals).
from tests.gateway.conftest import _reset_runs, agent, api, publish_tool, session_for  # noqa: F401

APPS = ["tenancy", "catalog", "ledger", "audit", "capabilities", "demo_shop"]


@dataclass
class TenantWorld:
    tenant: Tenant
    agent: Agent
    key: AgentKey
    tool: Tool
    version: ToolVersion
    grant: Grant
    policy: TenantPolicy
    entry: LedgerEntry
    invocation: Invocation
    capability: CapabilityRequest


def build_tenant_world(slug: str) -> TenantWorld:
    """One tenant's rows; every name, task and subject starts with the slug."""
    tenant = TenantFactory(slug=slug)
    bot = AgentFactory(tenant=tenant, name=f"{slug}-bot")
    key = agent_key_issue(agent=bot, label=f"{slug}-key").key
    tool = ToolFactory(name=f"{slug}_tool", tenant=tenant)
    version = published(tool=tool, number=1, description=f"{slug} tool: finds things.")
    now = timezone.now()
    entry = LedgerEntry.objects.create(
        tenant=tenant, agent=bot, key=f"{slug}/{slug}-task/call_1/{tool.name}/h", task_id=f"{slug}-task",
        call_id="call_1", tool=tool, version=version, subject=f"{slug}-user", args_hash="h",
        arguments={"query": f"{slug}-secret-argument"},
    )
    LedgerEvent.objects.create(entry=entry, to_state="intent", actor="gateway", note=f"{slug} intent")
    return TenantWorld(
        tenant=tenant, agent=bot, key=key, tool=tool, version=version,
        grant=Grant.objects.create(tenant=tenant, agent=bot, tool=tool),
        policy=TenantPolicy.objects.create(tenant=tenant, rate_limit_per_minute=10),
        entry=entry,
        invocation=Invocation.objects.create(
            tenant=tenant, agent=bot, task_id=f"{slug}-task", call_id="call_1", tool_name=tool.name,
            status="ok", latency_ms=3.0, envelope={"status": "ok", "data": [f"{slug}-result"]},
        ),
        capability=CapabilityRequest.objects.create(
            tenant=tenant, name=f"{slug}_wish", count=2, first_seen=now, last_seen=now,
        ),
    )


@dataclass
class World:
    acme: TenantWorld
    globex: TenantWorld
    shared_tool: Tool
    shared_version: ToolVersion


@pytest.fixture
def world(db) -> World:
    shared_tool = ToolFactory(name="shared_tool")
    return World(
        acme=build_tenant_world("acme"),
        globex=build_tenant_world("globex"),
        shared_tool=shared_tool,
        shared_version=published(tool=shared_tool, number=1),
    )


def staff_user(username: str, *, tenant: Tenant | None = None) -> User:
    """A staff user with every permission of ToolHub's apps, scoped to `tenant` if given."""
    user = User.objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=APPS))
    if tenant is not None:
        StaffScope.objects.create(user=user, tenant=tenant)
    return user


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def acme_staff(world) -> Client:
    return logged_in(staff_user("acme-staff", tenant=world.acme.tenant))


@pytest.fixture
def unscoped_staff(world) -> Client:
    return logged_in(staff_user("no-scope"))


@pytest.fixture
def superuser(world) -> Client:
    return logged_in(User.objects.create_superuser(username="root", password="pw"))
