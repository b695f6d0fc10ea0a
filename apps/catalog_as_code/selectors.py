"""Reads of the catalog as code: a tenant's catalog or the platform's part as a document,
and the rows a plan's steps act on."""

from __future__ import annotations

from typing import Any

from apps.catalog.models import Tool, Toolset, ToolVersion
from apps.tenancy.models import Agent, Grant, Tenant, TenantPolicy
from apps.upstreams.models import Credential, Upstream, owned_by

from .document import tenant_document
from .platform import platform_document
from .steps import Context


def tenant_catalog_snapshot(*, tenant: Tenant) -> tuple[dict[str, Any], Context]:
    """The tenant's catalog as a document (document.py), and what a plan against
    it also needs: the shared tools its agents see, with their versions' statuses, and the
    names of its agents."""
    tools = (
        Tool.objects.filter(tenant=tenant).select_related("replaced_by").prefetch_related("versions")
    )
    toolsets = Toolset.objects.filter(tenant=tenant).prefetch_related("tools", "phases__tools")
    # Grants of shared tools are the platform's to make: they are in the platform's document.
    grants = Grant.objects.for_tenant(tenant).filter(tool__tenant=tenant).select_related(
        "tool", "agent", "pinned_version"
    )
    policies = TenantPolicy.objects.for_tenant(tenant).select_related("tool")
    upstreams = Upstream.objects.filter(tenant=tenant).select_related("credential", "launcher")
    document = tenant_document(
        tenant_slug=tenant.slug, tools=tools, toolsets=toolsets, upstreams=upstreams, grants=grants,
        policies=policies,
    )
    shared: dict[str, dict[int, str]] = {
        name: {} for name in Tool.objects.filter(tenant__isnull=True).values_list("name", flat=True)
    }
    for name, number, status in ToolVersion.objects.filter(tool__tenant__isnull=True).values_list(
        "tool__name", "number", "status"
    ):
        shared[name][number] = status
    agents = frozenset(Agent.objects.for_tenant(tenant).values_list("name", flat=True))
    return document, Context(shared_tools=shared, agents=agents)


def grant_by_tool_and_agent(*, tenant: Tenant, tool: Tool, agent: Agent | None) -> Grant | None:
    return Grant.objects.for_tenant(tenant).filter(tool=tool, agent=agent).first()


def tenant_policy_by_tool(*, tenant: Tenant, tool: Tool | None) -> TenantPolicy | None:
    return TenantPolicy.objects.for_tenant(tenant).filter(tool=tool).first()


def platform_catalog_snapshot() -> dict[str, Any]:
    """The platform's part of the installation as a document (platform.py): the shared tools
    and toolsets, the platform's upstreams, every tenant with its agents, and the grants of
    shared tools."""
    return platform_document(
        tools=Tool.objects.filter(tenant__isnull=True).select_related("replaced_by").prefetch_related("versions"),
        toolsets=Toolset.objects.filter(tenant__isnull=True).prefetch_related("tools", "phases__tools"),
        upstreams=Upstream.objects.filter(tenant__isnull=True).select_related("credential", "launcher"),
        tenants=Tenant.objects.all(),
        agents=Agent.objects.all(),
        grants=Grant.objects.filter(tool__tenant__isnull=True).select_related(
            "tenant", "tool", "agent", "pinned_version"
        ),
    )


def credentials_without_value(*, tenant: Tenant | None) -> list[str]:
    """Names of the credentials of `tenant` (None: the platform's) that its upstreams send
    but that hold no value yet (declared by a document): calls through them fail until one
    is set. Per-end-user credentials hold none of their own and are not listed."""
    return sorted(
        Credential.objects.filter(
            owned_by(tenant.pk if tenant else None), per_subject=False, ciphertext="", upstreams__isnull=False
        ).values_list("name", flat=True).distinct()
    )
