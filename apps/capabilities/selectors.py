"""Reads of the capabilities app."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.tenancy.models import Tenant

from .models import CapabilityRequest


def capability_requests(*, tenant_id: int | None) -> QuerySet[CapabilityRequest]:
    """A tenant's capability requests (every tenant's with None), most requested first."""
    rows = CapabilityRequest.objects.select_related("tenant", "fulfilled_by").order_by("-count", "-last_seen")
    return rows if tenant_id is None else rows.filter(tenant_id=tenant_id)


def tenant_id_for_slug(*, slug: str) -> int:
    """The id of the tenant with this slug (executors know their tenant by slug)."""
    return Tenant.objects.values_list("pk", flat=True).get(slug=slug)
