"""Abstract bases shared by every app: timestamps and tenant ownership."""

from __future__ import annotations

from django.db import models


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class TenantOwnedQuerySet(models.QuerySet):
    def for_tenant(self, tenant: models.Model | int) -> TenantOwnedQuerySet:
        """Rows of one tenant only: every tenant-owned read goes through this."""
        tenant_id = tenant if isinstance(tenant, int) else tenant.pk
        return self.filter(tenant_id=tenant_id)


class TenantOwnedModel(TimeStampedModel):
    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.PROTECT, related_name="+")

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        abstract = True
