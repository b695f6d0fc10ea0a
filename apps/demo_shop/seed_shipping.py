"""Seeding the demo shipping MCP server (shipping/server.py) into the demo tenant, as its
operators and curators would: the upstream with its credential and status tool, its tools
imported, reviewed and published in the `support` toolset, and granted to the demo agent.

The import reads the tools' definitions from the server's own module rather than over the
network, so `seed_demo` works whether or not the server runs; they are exactly what its
`tools/list` answers, so each version's pinned `source` is what `import_mcp` would pin and
a drift check against the running server finds nothing until someone changes it.
"""

from __future__ import annotations

from django.conf import settings

from apps.catalog.models import Tool, ToolVersion, VersionStatus
from apps.catalog.services import version_publish, version_save_draft
from apps.imports.mcp_services import mcp_definitions_import
from apps.tenancy.models import Tenant
from apps.upstreams.models import CredentialKind, Upstream, UpstreamKind
from apps.upstreams.selectors import credential_get, upstream_get
from apps.upstreams.services import credential_set, upstream_save

from .shipping.server import reviewed_tool_definitions

SHIPPING_UPSTREAM = "demo-shipping"
SHIPPING_CREDENTIAL = "demo-shipping-key"
STATUS_TOOL = "pickup_status"


def _seed_upstream(tenant: Tenant, actor: str) -> None:
    """The tenant's MCP server upstream at TOOLHUB_DEMO_SHIPPING_MCP_URL (moved when the
    server's port moved), with the demo key as its credential and its status tool."""
    credential = credential_get(tenant_id=tenant.pk, name=SHIPPING_CREDENTIAL) or credential_set(
        tenant=tenant, name=SHIPPING_CREDENTIAL, kind=CredentialKind.BEARER, field="",
        value=settings.TOOLHUB_SECRETS["DEMO_SHIPPING_API_KEY"], per_subject=False, actor=actor,
    )
    upstream = upstream_get(tenant_id=tenant.pk, name=SHIPPING_UPSTREAM) or Upstream(
        tenant=tenant, name=SHIPPING_UPSTREAM, kind=UpstreamKind.MCP, credential=credential,
        status_tool=STATUS_TOOL,
    )
    if upstream.pk is None or upstream.base_url != settings.TOOLHUB_DEMO_SHIPPING_MCP_URL:
        upstream.base_url = settings.TOOLHUB_DEMO_SHIPPING_MCP_URL
        upstream_save(upstream=upstream, actor=actor)


def _reviewed(version: ToolVersion, actor: str) -> ToolVersion:
    """What a curator does with an imported draft before publishing it: a shipment id the
    model sends as " shp-000042" is made canonical. (The import already took the write's
    idempotency key out of what the model fills.)"""
    if "shipment_id" not in version.parameters["properties"]:
        return version
    version.normalizers = {**version.normalizers, "shipment_id": ["trim", "upper"]}
    return version_save_draft(
        version=version, actor=actor, note="Reviewed: shipment_id trimmed and upper-cased."
    )


def shipping_seed(*, tenant: Tenant, agent_name: str, actor: str) -> dict[str, Tool]:
    """The demo shipping server as the tenant's upstream, and its tools imported, reviewed,
    published (once) and granted to `agent_name`; the tools by name. A rerun changes nothing
    (the import finds the definitions unchanged). Writes through the upstreams', imports' and
    catalog's services, each with its audit events."""
    _seed_upstream(tenant, actor)
    report = mcp_definitions_import(
        tenant=tenant, upstream=SHIPPING_UPSTREAM, definitions=reviewed_tool_definitions(), actor=actor,
        grant_agents=[agent_name],
    )
    tools = {}
    for result in report.results:
        if result.version is None:
            raise RuntimeError(f"The demo shipping tool {result.key} could not be imported: {result.reason}")
        if result.version.status == VersionStatus.DRAFT:
            version_publish(version=_reviewed(result.version, actor), actor=actor,
                            note="Published by seed_demo.")
        tools[result.tool] = result.version.tool
    return tools
