"""Reads of the capabilities app."""

from __future__ import annotations

from apps.tenancy.models import Tenant


def tenant_id_for_slug(*, slug: str) -> int:
    """The id of the tenant with this slug (executors know their tenant by slug)."""
    return Tenant.objects.values_list("pk", flat=True).get(slug=slug)
