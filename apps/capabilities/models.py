"""What agents asked for and could not get, grouped by a normalized capability name."""

from __future__ import annotations

from django.db import models

from apps.common.models import TenantOwnedModel


class CapabilityStatus(models.TextChoices):
    OPEN = "open"
    PLANNED = "planned"
    FULFILLED = "fulfilled"
    DECLINED = "declined"


class CapabilityReason(models.TextChoices):
    """Why agents could not do it: no such tool, or a tool of theirs called in the wrong step."""

    UNKNOWN = "unknown", (
        "missing: the agent has no tool of that name, or asked for one with request_capability"
    )
    NOT_IN_PHASE = "not_in_phase", "exists, called outside its toolset or phase"


class CapabilityRequest(TenantOwnedModel):
    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=200, help_text="Normalized capability name.")
    reason = models.CharField(
        max_length=12, choices=CapabilityReason.choices, default=CapabilityReason.UNKNOWN,
        help_text="Missing capabilities (unknown tools, request_capability) are counted apart "
        "from calls of an existing tool outside the phase that offers it.",
    )
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
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name", "reason"], name="capability_unique_name_reason")
        ]

    def __str__(self) -> str:
        where = " outside its phase" if self.reason == CapabilityReason.NOT_IN_PHASE else ""
        return f"{self.name}{where} ×{self.count} ({self.status})"
