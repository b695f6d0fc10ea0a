"""Append-only audit events and the invocation log."""

from __future__ import annotations

from django.db import models


class AuditEvent(models.Model):
    """Who changed what, when and why. Written inside the transaction of the change."""

    tenant = models.ForeignKey(
        "tenancy.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    actor = models.CharField(max_length=200)
    action = models.CharField(max_length=100)
    target_type = models.CharField(max_length=100)
    target_id = models.CharField(max_length=100)
    note = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at"]
        # The admin's list on millions of rows (docs/performance.md): its filters' choices are
        # walked value to value in the action and target type indexes (for tenant staff, in
        # those led by the tenant); tenant staff's list reads (tenant, -at) newest first; the
        # search is exact. Actions and target types repeat: without the time as a second key,
        # their indexes are deduplicated to a fifth of the size.
        indexes = [
            models.Index(fields=["action"], name="auditevent_action"),
            models.Index(fields=["target_type"], name="auditevent_target_type"),
            models.Index(fields=["tenant", "-at"], name="auditevent_tenant_recent"),
            models.Index(fields=["tenant", "action"], name="auditevent_tenant_action"),
            models.Index(fields=["tenant", "target_type"], name="auditevent_tenant_target"),
            models.Index(fields=["actor"], name="auditevent_actor"),
            models.Index(fields=["target_id"], name="auditevent_target_id"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.target_type}:{self.target_id} by {self.actor}"


class Invocation(models.Model):
    """One call through the invoke pipeline, whatever its outcome."""

    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.PROTECT, related_name="+")
    agent = models.ForeignKey("tenancy.Agent", on_delete=models.PROTECT, related_name="+")
    task_id = models.CharField(max_length=200)
    call_id = models.CharField(max_length=200)
    tool_name = models.CharField(max_length=200)
    version_number = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=20)
    kind = models.CharField(max_length=30, blank=True)
    latency_ms = models.FloatField()
    args_chars = models.PositiveIntegerField(default=0)
    result_chars = models.PositiveIntegerField(default=0)
    execution_id = models.UUIDField(null=True, blank=True)
    # The execution of the code run (run_python call) that made this call; empty for the agent's own.
    parent_execution_id = models.UUIDField(null=True, blank=True)
    dry_run = models.BooleanField(default=False)
    envelope = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "-created_at"], name="invocation_tenant_recent"),
            models.Index(fields=["tool_name", "-created_at"], name="invocation_tool_recent"),
            models.Index(fields=["status", "kind", "-created_at"], name="invocation_outcome"),
            models.Index(fields=["tenant", "task_id"], name="invocation_task"),
            # The admin's filters, search and dashboard windows, on millions of rows
            # (docs/performance.md).
            models.Index(fields=["-created_at"], name="invocation_recent"),
            models.Index(fields=["kind", "-created_at"], name="invocation_kind_recent"),
            models.Index(fields=["task_id"], name="invocation_task_id"),
            # The admin's search is task id OR call id: without this, a scan of every partition.
            models.Index(fields=["call_id"], name="invocation_call_id"),
            models.Index(
                fields=["parent_execution_id"],
                name="invocation_parent",
                condition=models.Q(parent_execution_id__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} {self.status}{'/' + self.kind if self.kind else ''}"
