"""Tenants, their agents, agent keys, grants, tenant policies and tenant-scoped staff."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from apps.common.models import TenantOwnedModel, TenantOwnedQuerySet, TimeStampedModel
from apps.common.rule_types import RULE_TYPES

slug_validator = RegexValidator(r"^[a-z0-9][a-z0-9-]*$", "Use lowercase letters, digits and '-'.")


class Tenant(TimeStampedModel):
    slug = models.CharField(max_length=63, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Agent(TenantOwnedModel):
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="agents")
    name = models.CharField(max_length=100, validators=[slug_validator])
    description = models.TextField(blank=True)
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["tenant__slug", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="agent_unique_name_per_tenant")
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.name}"


class AgentKeyQuerySet(TenantOwnedQuerySet):
    def active(self) -> AgentKeyQuerySet:
        return self.filter(revoked_at__isnull=True)


AgentKeyManager = models.Manager.from_queryset(AgentKeyQuerySet)

# The keys that authenticate: not revoked, of an active agent of an active tenant.
USABLE_KEYS = Q(revoked_at__isnull=True, agent__active=True, tenant__active=True)


class AgentKey(TenantOwnedModel):
    """An API key of one agent. Only the prefix (to find it) and a SHA-256 digest are kept."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="agent_keys")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="keys")
    label = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    digest = models.CharField(max_length=64, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects: ClassVar[AgentKeyManager] = AgentKeyManager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.agent})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class Grant(TenantOwnedModel):
    """Lets a whole tenant (agent empty) or one agent call a tool, optionally pinned.

    Grants of a shared tool are the platform's to make (tenancy's grant_save refuses a
    tenant's staff); `granted_by_platform` records who saved the grant as it stands, so that
    `manage.py audit_grants` can list the shared-tool grants the platform did not make.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="grants")
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, null=True, blank=True, related_name="grants",
        help_text="Empty: every agent of the tenant.",
    )
    tool = models.ForeignKey("catalog.Tool", on_delete=models.CASCADE, related_name="grants")
    pinned_version = models.ForeignKey(
        "catalog.ToolVersion", on_delete=models.PROTECT, null=True, blank=True,
        related_name="+", help_text="Empty: the latest published version.",
    )
    granted_by = models.CharField(
        max_length=200, blank=True, editable=False,
        help_text="Who saved the grant, as the audit log names them.",
    )
    granted_by_platform = models.BooleanField(
        null=True, editable=False,
        help_text="Yes: saved by the platform (a superuser, the seed); no: by a tenant's staff or a "
        "tenant's catalog file; empty: not recorded (saved before ToolHub recorded it).",
    )

    class Meta:
        ordering = ["tenant__slug", "tool__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "agent", "tool"], name="grant_unique_per_agent"
            ),
            models.UniqueConstraint(
                fields=["tenant", "tool"], condition=models.Q(agent__isnull=True),
                name="grant_unique_per_tenant",
                violation_error_message="This tenant already has a grant of this tool for all its "
                "agents; edit that grant instead.",
            ),
        ]

    def __str__(self) -> str:
        who = self.agent.name if self.agent is not None else "all agents"
        return f"{self.tenant.slug}: {who} → {self.tool.name}"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.tenant_id and self.agent is not None and self.agent.tenant_id != self.tenant_id:
            errors["agent"] = f"Agent {self.agent} belongs to another tenant; pick one of this tenant's."
        if self.tenant_id and self.tool_id and self.tool.tenant_id not in (None, self.tenant_id):
            errors["tool"] = (
                f"Tool {self.tool.name} belongs to another tenant; only shared tools and this "
                "tenant's own can be granted."
            )
        pinned = self.pinned_version if self.tool_id else None
        if pinned is not None:
            if pinned.tool_id != self.tool_id:
                errors["pinned_version"] = (
                    f"{pinned} is a version of {pinned.tool.name}, not of {self.tool.name}."
                )
            elif pinned.status not in ("published", "deprecated"):
                errors["pinned_version"] = (
                    f"Version {pinned.number} is {pinned.status}; pin a published (or deprecated) "
                    "version, or leave empty for the latest published one."
                )
        if errors:
            raise ValidationError(errors)


class TenantPolicy(TenantOwnedModel):
    """Narrows limits for one tenant, for all its tools (tool empty) or one tool."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="policies")
    tool = models.ForeignKey(
        "catalog.Tool", on_delete=models.CASCADE, null=True, blank=True, related_name="+",
        help_text="Empty: applies to every tool of the tenant.",
    )
    rate_limit_per_minute = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="Calls per agent and tool per minute.",
    )
    task_call_budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="Calls of this tool allowed in one task."
    )
    daily_quota_per_subject = models.PositiveIntegerField(
        null=True, blank=True, help_text="Calls per end user (session subject) per day."
    )
    requires_approval = models.BooleanField(
        default=False, help_text="Writes need an operator's approval before they run."
    )
    rule_overrides = models.JSONField(
        default=dict, blank=True,
        help_text='Per rule type, parameters that replace the version\'s, e.g. '
        '{"max_span": {"max_days": 31}}.',
    )
    open_on_request = models.BooleanField(
        default=True,
        help_text="request_capability may open granted tools of other toolsets and phases to the task "
        "that asks (this tool, or every tool for a tenant-wide policy). Off: it only records the request.",
    )
    max_opened_per_task = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="At most this many tools opened by request_capability in one task (tenant-wide policy).",
    )

    class Meta:
        verbose_name_plural = "tenant policies"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "tool"], name="policy_unique_per_tool"),
            models.UniqueConstraint(
                fields=["tenant"], condition=models.Q(tool__isnull=True),
                name="policy_unique_per_tenant",
                violation_error_message="This tenant already has a policy for all its tools; "
                "edit that policy instead.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug}: {self.tool.name if self.tool is not None else 'all tools'}"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.tenant_id and self.tool is not None and self.tool.tenant_id not in (None, self.tenant_id):
            errors["tool"] = f"Tool {self.tool.name} belongs to another tenant."
        overrides = self.rule_overrides
        if not isinstance(overrides, dict):
            errors["rule_overrides"] = 'Use a JSON object: {"<rule type>": {<parameters>}}.'
        else:
            unknown = sorted(name for name in overrides if name not in RULE_TYPES)
            not_objects = sorted(name for name, value in overrides.items() if not isinstance(value, dict))
            if unknown:
                errors["rule_overrides"] = (
                    f"Unknown rule types: {', '.join(unknown)}. Known: {', '.join(RULE_TYPES)}."
                )
            elif not_objects:
                errors["rule_overrides"] = (
                    f"The parameters of {', '.join(not_objects)} must be a JSON object, "
                    'e.g. {"max_span": {"max_days": 31}}.'
                )
        if errors:
            raise ValidationError(errors)


class StaffScope(models.Model):
    """Restricts a staff user of the admin to one tenant. Superusers are never scoped."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="staff_scope"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="staff_scopes")

    def __str__(self) -> str:
        return f"{self.user} → {self.tenant.slug}"


class TaskToolOpening(TenantOwnedModel):
    """A granted tool that `request_capability` opened to one task of one agent: the task may
    call it outside the toolset and phase that offer it, for the rest of the task."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    task_id = models.CharField(max_length=200)
    tool = models.ForeignKey("catalog.Tool", on_delete=models.CASCADE, related_name="+")
    capability = models.CharField(max_length=200, help_text="What the agent asked for, normalized.")
    toolset = models.CharField(max_length=64, blank=True, help_text="Where the task was when it asked.")
    phase = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "agent", "task_id", "tool"], name="opening_unique_per_task"
            )
        ]
        indexes = [models.Index(fields=["tenant", "capability"], name="opening_capability")]

    def __str__(self) -> str:
        return f"{self.tool.name} opened to task {self.task_id}"
