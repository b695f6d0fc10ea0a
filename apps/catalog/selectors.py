"""Reads of the catalog app."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from apps.tenancy.models import Tenant

from .models import Tool, ToolVersion, VersionStatus


def version_latest_published(*, tool: Tool) -> ToolVersion | None:
    """The published version of this tool with the highest number, or None."""
    return (
        ToolVersion.objects.filter(tool=tool, status=VersionStatus.PUBLISHED)
        .select_related("tool")
        .order_by("-number")
        .first()
    )


def tools_visible_to_tenant(*, tenant: Tenant | int) -> QuerySet[Tool]:
    """The shared catalog (tools without a tenant) plus the tenant's own tools."""
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    return Tool.objects.filter(Q(tenant__isnull=True) | Q(tenant_id=tenant_id))
