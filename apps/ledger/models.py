"""The side-effect ledger: one row per governed execution, and every state change it went through."""

from __future__ import annotations

import uuid

from django.db import models

from apps.common.models import TenantOwnedModel


class LedgerState(models.TextChoices):
    INTENT = "intent"
    COMMITTED = "committed"
    FAILED = "failed"
    UNKNOWN = "unknown"


class LedgerEntry(TenantOwnedModel):
    """A side effect ToolHub was asked to cause, keyed so that it happens at most once.

    The key is `{tenant}/{task_id}/{call_id}/{tool}/{args_hash}` with '%' and '/' in each part
    percent-encoded (so no two calls share a key); its unique constraint, not a prior SELECT,
    is what makes concurrent duplicates harmless.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: the indexes and the constraint below that lead with it serve
    # every lookup by tenant, and each index costs every write.
    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.PROTECT, related_name="+", db_index=False)
    agent = models.ForeignKey("tenancy.Agent", on_delete=models.PROTECT, related_name="+")
    # Task and call ids of 200 characters, each of which may take 3 once encoded. Unique by
    # a constraint, not unique=True, which on PostgreSQL adds an index for LIKE searches:
    # a key is only ever looked up whole.
    key = models.CharField(max_length=1400)
    task_id = models.CharField(max_length=200)
    call_id = models.CharField(max_length=200)
    # No index of its own: ledger_tool_recent leads with it.
    tool = models.ForeignKey("catalog.Tool", on_delete=models.PROTECT, related_name="+", db_index=False)
    version = models.ForeignKey("catalog.ToolVersion", on_delete=models.PROTECT, related_name="+")
    subject = models.CharField(max_length=200, blank=True)
    args_hash = models.CharField(max_length=64)
    arguments = models.JSONField()
    state = models.CharField(max_length=10, choices=LedgerState.choices, default="intent")
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True, help_text="Stored error envelope.")
    run_async = models.BooleanField(
        default=False, help_text="Executed by a Celery task rather than in the request."
    )
    claimed_at = models.DateTimeField(
        null=True, blank=True, help_text="When an executor started on it; empty: not started yet."
    )
    attempts = models.PositiveIntegerField(default=0, help_text="Reconciliation attempts.")
    next_check_at = models.DateTimeField(null=True, blank=True)
    triage_since = models.DateTimeField(
        null=True, blank=True, help_text="When reconciliation gave up and a person must settle it."
    )
    settled_at = models.DateTimeField(null=True, blank=True)
    # A call made by code of a run_python call is that run's inner call: its entry names the run.
    parent = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="inner_entries",
        help_text="The code run (run_python call) that made this call; empty for a call of the agent's own.",
    )
    context = models.JSONField(
        default=dict,
        blank=True,
        help_text="Where the call was made (toolset, phase, end-user attributes), for a worker that "
        "runs it later.",
    )

    class Meta:
        verbose_name_plural = "ledger entries"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "task_id", "call_id"], name="ledger_unique_call_per_task"
            ),
            models.UniqueConstraint(fields=["key"], name="ledger_unique_key"),
        ]
        indexes = [
            models.Index(fields=["state", "created_at"], name="ledger_state_age"),
            models.Index(fields=["tenant", "state", "created_at"], name="ledger_tenant_state_age"),
            models.Index(fields=["state", "next_check_at"], name="ledger_due_checks"),
            # The admin's filters and search, on millions of rows (docs/performance.md).
            models.Index(fields=["tenant", "-created_at"], name="ledger_tenant_recent"),
            models.Index(fields=["tool", "-created_at"], name="ledger_tool_recent"),
            models.Index(fields=["task_id"], name="ledger_task"),
            models.Index(
                fields=["triage_since"],
                name="ledger_triage_queue",
                condition=models.Q(state="unknown", triage_since__isnull=False),
            ),
        ]
        permissions = [("settle_ledgerentry", "Can settle or reconcile an unknown ledger entry")]

    def __str__(self) -> str:
        return f"{self.tool.name} · task {self.task_id} · call {self.call_id} · {self.state}"


class TriageEntry(LedgerEntry):
    """The triage queue: unknown entries reconciliation gave up on, for a person to settle.

    A proxy so that the queue is its own admin page with its own view permission.
    """

    class Meta:
        proxy = True
        verbose_name = "triage entry"
        verbose_name_plural = "triage queue"


class CodeRun(LedgerEntry):
    """Code runs: the entries of run_python calls (versions of the `sandbox` executor), each
    with its code, what it printed and returned or what stopped it, and its inner calls.

    A proxy so that runs are their own admin page with their own view permission; which
    entries are runs is the selector's to say (selectors.code_runs).
    """

    class Meta:
        proxy = True
        verbose_name = "code run"
        verbose_name_plural = "code runs"


class LedgerEvent(models.Model):
    """One transition of an entry: from, to, who or what made it, when, and why."""

    entry = models.ForeignKey(LedgerEntry, on_delete=models.CASCADE, related_name="events")
    from_state = models.CharField(max_length=10, blank=True)
    to_state = models.CharField(max_length=10)
    actor = models.CharField(max_length=200)
    note = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.from_state or '∅'} → {self.to_state} by {self.actor}"


class ReconcileAttempt(models.Model):
    """One question to the executor's reconcile hook about an unknown entry, and its answer."""

    class Answer(models.TextChoices):
        FOUND = "found"
        ABSENT = "absent"
        UNCLEAR = "unclear"

    entry = models.ForeignKey(LedgerEntry, on_delete=models.CASCADE, related_name="reconcile_attempts")
    answer = models.CharField(max_length=8, choices=Answer.choices)
    note = models.TextField(blank=True)
    actor = models.CharField(max_length=200)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.answer}: {self.note}"


class ApprovalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


class Approval(models.Model):
    """An operator's go-ahead for one high-impact call, bound to its exact version and arguments."""

    entry = models.OneToOneField(LedgerEntry, on_delete=models.CASCADE, related_name="approval")
    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.PROTECT, related_name="+")
    version = models.ForeignKey("catalog.ToolVersion", on_delete=models.PROTECT, related_name="+")
    args_hash = models.CharField(max_length=64)
    reason = models.TextField(help_text="Why this call needs approval.")
    status = models.CharField(max_length=10, choices=ApprovalStatus.choices, default="pending")
    expires_at = models.DateTimeField()
    decided_by = models.CharField(max_length=200, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["status", "expires_at"], name="approval_pending_expiry")]
        permissions = [("decide_approval", "Can approve or reject a pending call")]

    def __str__(self) -> str:
        """What is to be approved, as an operator tells calls apart: tool, task and call."""
        entry = self.entry
        return (f"{entry.tool.name} v{self.version.number} for task {entry.task_id}, call {entry.call_id} "
                f"({self.status})")


class PendingApproval(Approval):
    """Calls waiting for an operator's decision: a proxy, so they are their own admin page."""

    class Meta:
        proxy = True
        verbose_name = "pending approval"
        verbose_name_plural = "pending approvals"
