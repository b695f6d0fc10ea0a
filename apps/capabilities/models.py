"""What agents asked for and could not get, grouped by a normalized capability name."""

from __future__ import annotations

from django.db import models

from apps.common.models import TenantOwnedModel


class CapabilityStatus(models.TextChoices):
    OPEN = "open"
    PLANNED = "planned"
    FULFILLED = "fulfilled"
    DECLINED = "declined"


class CapabilityRequest(TenantOwnedModel):
    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=200, help_text="Normalized capability name.")
    status = models.CharField(max_length=10, choices=CapabilityStatus.choices, default=CapabilityStatus.OPEN)
    fulfilled_by = models.ForeignKey(
        "catalog.Tool", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decline_reason = models.TextField(blank=True)
    count = models.PositiveIntegerField(default=0)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField(db_index=True)
    samples = models.JSONField(default=list, blank=True, help_text="The latest calls, newest first.")

    class Meta:
        ordering = ["-count"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="capability_unique_name")]

    def __str__(self) -> str:
        return f"{self.name} ×{self.count} ({self.status})"
