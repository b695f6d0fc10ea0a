"""Reads of the imports app: which version an operation or tool was imported into before."""

from __future__ import annotations

from apps.catalog.models import Tool, ToolVersion
from apps.catalog.selectors import tool_visible_by_name
from apps.tenancy.models import Tenant


def version_imported_from(
    *, tenant: Tenant, upstream: str, key: str, kind: str = "openapi"
) -> ToolVersion | None:
    """The tenant's newest version made from `key` of `upstream` (an operation of its OpenAPI
    document, or a tool its MCP server lists), or None."""
    return (
        ToolVersion.objects.filter(
            tool__tenant=tenant, source__kind=kind, source__upstream=upstream, source__key=key
        )
        .select_related("tool")
        .order_by("-created_at", "-pk")
        .first()
    )


def version_latest(*, tool: Tool) -> ToolVersion:
    """The tool's highest-numbered version, whatever its status (a tool has one from its
    creation on; ToolVersion.DoesNotExist otherwise)."""
    return ToolVersion.objects.select_related("tool").filter(tool=tool).latest("number")


def tool_name_is_free(*, tenant: Tenant, name: str) -> bool:
    """Whether a new tool of the tenant may take `name` (not the tenant's, nor a shared one)."""
    return tool_visible_by_name(tenant=tenant, name=name) is None and not Tool.objects.filter(
        name=name, tenant__isnull=True
    ).exists()
