"""The drift findings of tools imported from MCP servers: what a server lists now against
the definition a tenant's published version was made from."""

from __future__ import annotations

from django.db import models

from apps.common.models import TenantOwnedModel


class DriftKind(models.TextChoices):
    DESCRIPTION = "description", "description changed"
    SCHEMA = "schema", "schema changed"
    ANNOTATIONS = "annotations", "annotations changed"
    REMOVED = "removed", "tool removed"
    ADDED = "added", "tool added"
    # Not a change: the check could not compare the tool (server not reached, a listing that
    # cannot be read, a finding that could not be stored). It suspends like a drift.
    INCOMPLETE = "incomplete", "check incomplete"


class DriftFinding(TenantOwnedModel):
    """A difference between what an MCP server lists now and the definition a tenant's
    published version was made from (its `source`): for a curator to review, never applied
    by itself. Open until reviewed; while open, calls to the tool are refused if its upstream
    says so (`suspend_drifted_tools`)."""

    upstream = models.ForeignKey(
        "upstreams.Upstream", on_delete=models.CASCADE, related_name="drift_findings"
    )
    upstream_tool = models.CharField(max_length=200, help_text="The server's name for the tool.")
    tool = models.ForeignKey(
        "catalog.Tool", on_delete=models.CASCADE, null=True, blank=True, related_name="drift_findings",
        help_text="The tool whose pinned definition drifted; empty for a tool the server added.",
    )
    version = models.ForeignKey(
        "catalog.ToolVersion", on_delete=models.PROTECT, null=True, blank=True, related_name="+",
        help_text="The published version whose source was compared.",
    )
    kind = models.CharField(max_length=12, choices=DriftKind.choices)
    pinned = models.JSONField(
        default=dict, blank=True, help_text="The definition the version was made from ({} for an added tool)."
    )
    current = models.JSONField(
        default=dict, blank=True, help_text="What the server lists now ({} for a removed tool, or when "
        "the check was incomplete). Text the database cannot hold (NUL) is kept escaped, as \\u0000."
    )
    problem = models.TextField(
        blank=True, help_text="Why the check could not compare the tool (a finding of kind check incomplete)."
    )
    fingerprint = models.CharField(
        max_length=80, help_text="Digest of the part that differs, before and now: the same drift, "
        "found again, is recognised by it."
    )
    detected_at = models.DateTimeField(
        help_text="When the server was first seen listing the current definition."
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.CharField(max_length=200, blank=True)
    review_note = models.TextField(blank=True)

    class Meta:
        ordering = ["-detected_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "upstream", "upstream_tool", "kind"],
                condition=models.Q(reviewed_at__isnull=True), name="drift_one_open_finding_per_change",
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "tool"], condition=models.Q(reviewed_at__isnull=True),
                         name="drift_open_by_tool"),
        ]

    def __str__(self) -> str:
        return f"{self.upstream_tool} of {self.upstream.name}: {self.get_kind_display()}"

    @property
    def is_open(self) -> bool:
        return self.reviewed_at is None
