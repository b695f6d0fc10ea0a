"""Reads of the capabilities app."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.tenancy.models import TaskToolOpening, Tenant


def tenant_id_for_slug(*, slug: str) -> int:
    """The id of the tenant with this slug (executors know their tenant by slug)."""
    return Tenant.objects.values_list("pk", flat=True).get(slug=slug)


def tools_opened_for(*, tenant_id: int, capability: str) -> QuerySet[TaskToolOpening]:
    """The tools request_capability opened to the tenant's tasks for this need, newest first."""
    return (
        TaskToolOpening.objects.for_tenant(tenant_id)
        .filter(capability=capability)
        .select_related("tool", "agent")
        .order_by("-created_at")
    )
