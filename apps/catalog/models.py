"""Tools, their immutable published versions, and toolsets with phases; the drift findings
of tools imported from MCP servers are in drift_models.py."""

from __future__ import annotations

from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from apps.common.builtin_tools import BUILTIN_TOOL_NAMES
from apps.common.executor_kinds import executor_kind_choices
from apps.common.models import (
    OwnerKind,
    TimeStampedModel,
    owner_name_clash,
    owner_name_constraints,
)

from .definitions import platform_settings_named, platform_settings_problems, validate_definition
from .search_text import search_document

tool_name_validator = RegexValidator(
    r"^[a-z][a-z0-9_]{0,63}$", "Use snake_case: lowercase letters, digits and '_', at most 64."
)


# Tools and toolsets without a tenant form the shared catalog every tenant's agents see.
SHARED_CATALOG = OwnerKind(label="shared catalog", adjective="shared")


class Tool(TimeStampedModel):
    name = models.CharField(
        max_length=64, validators=[tool_name_validator],
        help_text="Unique within its owner, and never the name of a shared tool (or, for a "
        "shared tool, of any tenant's).",
    )
    tenant = models.ForeignKey(
        "tenancy.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="tools",
        help_text="Owner. Empty: the shared catalog, visible to every tenant's curators.",
    )
    summary = models.CharField(max_length=200, blank=True, help_text="For curators only.")
    replaced_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
        help_text="Named in the hint when this tool's versions are retired.",
    )

    class Meta:
        ordering = ["name"]
        constraints = owner_name_constraints("tool", SHARED_CATALOG)

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors = {}
        clash = owner_name_clash(self, name=self.name, tenant_id=self.tenant_id, owner=SHARED_CATALOG)
        if self.name in BUILTIN_TOOL_NAMES:
            errors["name"] = (
                f"{self.name} is the name of a tool ToolHub itself offers every agent: a catalog tool "
                "of that name would never be called (the built-in one answers). Choose another name."
            )
        elif clash:
            errors["name"] = clash
        replacement = self.replaced_by
        if replacement is not None and replacement.tenant_id not in (None, self.tenant_id):
            # The retired tool's hint names its replacement to this tool's agents.
            errors["replaced_by"] = (
                f"{replacement.name} belongs to another tenant; name one of this tool's tenant "
                "or a shared tool."
            )
        if self.tenant_id is not None and (named := self._platform_settings_named()):
            errors["tenant"] = (
                f"Versions of this tool name platform settings ({', '.join(named)}): it must stay in the "
                "shared catalog, or that tenant's curators could send the platform's credentials "
                "anywhere. Make the tenant its own tool with its own upstream instead."
            )
        if errors:
            raise ValidationError(errors)

    def _platform_settings_named(self) -> list[str]:
        """The platform settings its versions name (none for a tool not saved yet)."""
        if self.pk is None:
            return []
        named: set[str] = set()
        for executor, config in self.versions.values_list("executor", "executor_config"):
            named.update(platform_settings_named(executor=executor, executor_config=config).values())
        return sorted(named)


class VersionStatus(models.TextChoices):
    DRAFT = "draft"
    PUBLISHED = "published"
    DEPRECATED = "deprecated"
    RETIRED = "retired"


class SideEffect(models.TextChoices):
    READONLY = "readonly", "Read-only"
    RECOMPUTABLE = "recomputable", "Recomputable"
    WRITE = "write", "Write"


class ExecutionMode(models.TextChoices):
    SYNC = "sync"
    ASYNC = "async"


ALLOWED_STATUS_CHANGES: dict[str, set[str]] = {
    VersionStatus.DRAFT: {VersionStatus.PUBLISHED},
    VersionStatus.PUBLISHED: {VersionStatus.DEPRECATED, VersionStatus.RETIRED},
    VersionStatus.DEPRECATED: {VersionStatus.PUBLISHED, VersionStatus.RETIRED},
    VersionStatus.RETIRED: set(),
}

DEFAULT_EMPTY_MEANING = (
    "No results match this call. This does not mean no such data exists: "
    "other filters may find some."
)


class ToolVersion(TimeStampedModel):
    """One version of a tool's contract with the model. Published versions never change."""

    # Everything a published version promises; frozen once it leaves draft.
    CONTENT_FIELDS = (
        "tool_id", "number", "description", "parameters", "strict", "side_effect",
        "executor", "executor_config", "timeout_s", "max_chars", "mode", "normalizers",
        "context_bindings", "rules", "empty_meaning", "loop_limit", "approval", "source",
        "output_schema", "annotations",
    )

    tool = models.ForeignKey(Tool, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    status = models.CharField(
        max_length=12, choices=VersionStatus.choices, default=VersionStatus.DRAFT, db_index=True
    )
    description = models.TextField(
        help_text="What the model reads: what it does, limits, and when not to use it."
    )
    parameters = models.JSONField(
        default=dict, help_text="JSON Schema (Draft 2020-12) of the arguments."
    )
    output_schema = models.JSONField(
        default=dict, blank=True,
        help_text="JSON Schema (Draft 2020-12, an object schema) of the result's data, listed to MCP "
        "clients as outputSchema; a result that matches it is also answered as structuredContent. "
        "Empty: none declared.",
    )
    annotations = models.JSONField(
        default=dict, blank=True,
        help_text="MCP tool annotations an import brought (readOnlyHint, destructiveHint, idempotentHint, "
        "openWorldHint, title). Listed to MCP clients, except that the hints about side effects always "
        "follow side_effect.",
    )
    strict = models.BooleanField(default=True, help_text="Every property required and no extra properties.")
    side_effect = models.CharField(max_length=12, choices=SideEffect.choices)
    # The kinds the gateway's executors declare (apps/common/executor_kinds.py): a callable, so
    # a new kind needs no migration.
    executor = models.CharField(max_length=32, choices=executor_kind_choices)
    executor_config = models.JSONField(default=dict, blank=True)
    timeout_s = models.FloatField(default=10.0, validators=[MinValueValidator(0.05), MaxValueValidator(600)])
    max_chars = models.PositiveIntegerField(
        default=8000, validators=[MinValueValidator(200)],
        help_text="Longer results are truncated with a summary.",
    )
    mode = models.CharField(max_length=5, choices=ExecutionMode.choices, default="sync")
    normalizers = models.JSONField(default=dict, blank=True)
    context_bindings = models.JSONField(default=dict, blank=True)
    rules = models.JSONField(default=list, blank=True)
    approval = models.JSONField(
        default=dict, blank=True,
        help_text='When an operator must approve a call, e.g. {"field": "amount_cents", '
        '"above": 10000} or {"always": true}.',
    )
    empty_meaning = models.TextField(blank=True, help_text="Said to the model on empty results.")
    loop_limit = models.PositiveIntegerField(
        default=3, validators=[MinValueValidator(1)],
        help_text="Identical calls allowed in one task before loop_detected.",
    )
    source = models.JSONField(
        default=dict, blank=True,
        help_text="What an importer made this version from (e.g. an OpenAPI operation and its "
        "digest); reviewed and frozen with the rest. Empty for versions written by hand.",
    )
    changelog = models.TextField(blank=True)
    published_at = models.DateTimeField(null=True, blank=True, editable=False)
    # What tool_search.py reads, derived by clean() (every save runs it); indexed on PostgreSQL.
    search_document = models.TextField(blank=True, editable=False)

    class Meta:
        ordering = ["tool__name", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["tool", "number"], name="version_unique_number"),
        ]
        indexes = [models.Index(fields=["tool", "status", "-number"])]

    def __str__(self) -> str:
        return f"{self.tool.name} v{self.number} ({self.status})"

    @property
    def is_editable(self) -> bool:
        return self.status == VersionStatus.DRAFT

    @property
    def meaning_of_empty(self) -> str:
        return self.empty_meaning or DEFAULT_EMPTY_MEANING

    def clean(self) -> None:
        errors = validate_definition(
            parameters=self.parameters,
            normalizers=self.normalizers,
            context_bindings=self.context_bindings,
            rules=self.rules,
            executor=self.executor,
            executor_config=self.executor_config,
            approval=self.approval,
            output_schema=self.output_schema,
            annotations=self.annotations,
        )
        if self.tool_id is not None and (
            problems := platform_settings_problems(
                executor=self.executor, executor_config=self.executor_config,
                platform_owned=self.tool.tenant_id is None,
            )
        ):
            errors.setdefault("executor_config", []).extend(problems)
        named = self.tool.name if self.tool_id is not None or ToolVersion.tool.is_cached(self) else ""
        self.search_document = search_document(name=named, description=self.description,
                                               parameters=self.parameters)
        if errors:
            raise ValidationError(errors)

    def save(self, *args, **kwargs) -> None:
        self._refuse_changes_to_frozen_content()
        self.clean()
        super().save(*args, **kwargs)

    def _refuse_changes_to_frozen_content(self) -> None:
        if self.pk is None:
            return
        stored = ToolVersion.objects.filter(pk=self.pk).values(*self.CONTENT_FIELDS, "status")
        before = stored.first()
        if before is None:
            return
        if before["status"] != self.status and self.status not in ALLOWED_STATUS_CHANGES[
            before["status"]
        ]:
            raise ValidationError(
                f"A {before['status']} version cannot become {self.status}.", code="status"
            )
        if before["status"] == VersionStatus.DRAFT:
            return
        changed = [f for f in self.CONTENT_FIELDS if before[f] != getattr(self, f)]
        if changed:
            raise ValidationError(
                f"Version {self.number} of {self.tool.name} is {before['status']} and cannot "
                f"change ({', '.join(changed)}). Create a new draft from it instead.",
                code="immutable",
            )


class Toolset(TimeStampedModel):
    """A named group of tools for one kind of agent work, split into phases.

    A tenant's toolset is seen by that tenant's agents only and holds its tools and shared
    ones; a shared toolset (no tenant) is seen by every agent and holds shared tools only.
    """

    name = models.CharField(
        max_length=64, validators=[tool_name_validator],
        help_text="Unique within its owner, and never the name of a shared toolset (or, for a "
        "shared toolset, of any tenant's).",
    )
    tenant = models.ForeignKey(
        "tenancy.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="toolsets",
        help_text="Owner. Empty: shared, seen by every tenant's agents (shared tools only).",
    )
    description = models.TextField(blank=True)
    tools = models.ManyToManyField(Tool, related_name="toolsets", blank=True)

    class Meta:
        ordering = ["name"]
        constraints = owner_name_constraints("toolset", SHARED_CATALOG)

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        clash = owner_name_clash(self, name=self.name, tenant_id=self.tenant_id, owner=SHARED_CATALOG)
        if clash:
            raise ValidationError({"name": clash}, code="name_clash")

    def foreign_tools(self, tools: Iterable[Tool]) -> list[str]:
        """Names of `tools` this toolset may not hold: another tenant's (any tenant's for a
        shared toolset), whose agents could not call them."""
        return sorted(t.name for t in tools if t.tenant_id is not None and t.tenant_id != self.tenant_id)

    def refuse_foreign_tools(self, tools: Iterable[Tool]) -> None:
        """Raise ValidationError naming the `tools` this toolset may not hold (see foreign_tools)."""
        foreign = self.foreign_tools(tools)
        if foreign:
            rule = (
                "A tenant's toolset holds only that tenant's tools and shared ones"
                if self.tenant_id
                else "A shared toolset holds only shared tools (every tenant's agents see it)"
            )
            raise ValidationError(f"{rule}; remove {', '.join(foreign)}.", code="foreign_tool")


class ToolsetPhase(models.Model):
    """A step of the work; only its tools (plus request_capability) are shown in it."""

    toolset = models.ForeignKey(Toolset, on_delete=models.CASCADE, related_name="phases")
    name = models.CharField(max_length=64, validators=[tool_name_validator])
    tools = models.ManyToManyField(Tool, related_name="phases", blank=True)
    gates = models.BooleanField(
        default=False,
        help_text="Its tools wait for the task to reach this phase (\"refund only after looking up\"): "
        "request_capability never opens them from another phase. Off, the phase only prunes the list.",
    )

    class Meta:
        ordering = ["toolset__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["toolset", "name"], name="phase_unique_per_toolset")
        ]

    def __str__(self) -> str:
        return f"{self.toolset.name}/{self.name}"


# Drift findings live in a module of their own; Django finds models imported here.
from .drift_models import DriftFinding, DriftKind  # noqa: E402, F401
