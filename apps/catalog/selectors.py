"""Reads of the catalog app."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Count, IntegerField, Model, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from apps.common.egress import egress_policy
from apps.upstreams.selectors import upstream_label

from .lint import Deployment, Finding, ToolDefinition, lint_tool, lint_toolset, sorted_findings
from .models import DriftFinding, DriftKind, Tool, Toolset, ToolVersion, VersionStatus
from .previews import token_estimator


def version_latest_published(*, tool: Tool) -> ToolVersion | None:
    """The published version of this tool with the highest number, or None."""
    return (
        ToolVersion.objects.filter(tool=tool, status=VersionStatus.PUBLISHED)
        .select_related("tool")
        .order_by("-number")
        .first()
    )


def tools_visible_to_tenant(*, tenant: Model | int) -> QuerySet[Tool]:
    """The shared catalog (tools without a tenant) plus the tenant's own tools."""
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    return Tool.objects.filter(Q(tenant__isnull=True) | Q(tenant_id=tenant_id))


def tool_visible_by_name(*, tenant: Model | int, name: str) -> Tool | None:
    """The tool this tenant's agents know as `name` (its own or a shared one), or None.

    Names are unique per tenant and a tenant's never repeats a shared one, so there is at
    most one; another tenant's tool of that name is never it.
    """
    return tools_visible_to_tenant(tenant=tenant).filter(name=name).first()


def toolset_get(*, tenant_id: int | None, name: str) -> Toolset | None:
    """The toolset of this name the tenant owns (`tenant_id` None: the shared one), or None."""
    named = Toolset.objects.filter(name=name)
    owned = named.filter(tenant__isnull=True) if tenant_id is None else named.filter(tenant_id=tenant_id)
    return owned.first()


def version_previous(*, version: ToolVersion) -> ToolVersion | None:
    """The version of the same tool numbered just below this one, or None."""
    return (
        ToolVersion.objects.filter(tool_id=version.tool_id, number__lt=version.number)
        .select_related("tool").order_by("-number").first()
    )


def version_content(version: ToolVersion) -> dict[str, Any]:
    """What a version promises (its content fields), for comparing two versions."""
    return {f: getattr(version, f) for f in ToolVersion.CONTENT_FIELDS if f not in ("tool_id", "number")}


def lint_definition(version: ToolVersion) -> ToolDefinition:
    """What lint reads of one version."""
    return ToolDefinition(
        name=version.tool.name,
        description=version.description,
        parameters=version.parameters,
        strict=version.strict,
        side_effect=version.side_effect,
        executor=version.executor,
        executor_config=version.executor_config,
        timeout_s=version.timeout_s,
        context_bindings=version.context_bindings,
        number=version.number,
        normalizers=version.normalizers,
        platform_owned=version.tool.tenant_id is None,
        source=version.source or {},
        output_schema=version.output_schema or {},
        annotations=version.annotations or {},
    )


def lint_deployment() -> Deployment:
    """What lint needs to know of this deployment: secrets and URL settings, the egress policy."""
    url_settings = {
        name: value
        for name in dir(settings)
        if name.isupper()
        and isinstance(value := getattr(settings, name, None), str)
        and value.startswith(("http://", "https://"))
    }
    return Deployment(
        secrets=frozenset(settings.TOOLHUB_SECRETS),
        url_settings=url_settings,
        egress_refusal=egress_policy().url_refusal,
    )


def _current_definitions(tools: QuerySet[Tool]) -> dict[int, ToolDefinition]:
    """The latest published version of each tool, by tool id: what models see today."""
    definitions: dict[int, ToolDefinition] = {}
    for version in (
        ToolVersion.objects.filter(tool__in=tools, status=VersionStatus.PUBLISHED)
        .select_related("tool")
        .order_by("tool_id", "-number")
    ):
        definitions.setdefault(version.tool_id, lint_definition(version))
    return definitions


def _neighbours(tool: Tool) -> QuerySet[Tool]:
    """Tools a model may see beside `tool`: its tenant's and the shared ones (all for a shared tool)."""
    return tools_visible_to_tenant(tenant=tool.tenant_id) if tool.tenant_id else Tool.objects.all()


def _toolset_findings(toolsets: QuerySet[Toolset], replace: ToolVersion | None = None) -> list[Finding]:
    estimate = token_estimator()
    findings: list[Finding] = []
    for toolset in toolsets.prefetch_related("tools"):
        definitions = _current_definitions(toolset.tools.all())
        if replace is not None:
            definitions[replace.tool_id] = lint_definition(replace)
        findings += lint_toolset(
            toolset.name, list(definitions.values()),
            max_tools=settings.TOOLHUB_LINT_MAX_TOOLSET_TOOLS,
            max_tokens=settings.TOOLHUB_LINT_MAX_TOOLSET_TOKENS,
            tokens_of=estimate,
        )
    return findings


def version_findings(*, version: ToolVersion) -> list[Finding]:
    """Lint of one version against the tools beside it, and of the toolsets its tool is in
    (counted with this version in place of the tool's published one)."""
    return versions_findings(versions=[version])[version.pk]


def versions_findings(*, versions: list[ToolVersion]) -> dict[Any, list[Finding]]:
    """version_findings of each of `versions` by its pk, reading the tools beside them once per
    tenant rather than once per version (an import lints hundreds of drafts together)."""
    beside: dict[int | None, dict[int, ToolDefinition]] = {}
    deployment = lint_deployment()
    found: dict[Any, list[Finding]] = {}
    # The toolsets of a tool are read only for the tools in one: an import's new tools are in none.
    in_toolsets = set(Toolset.tools.through.objects.filter(tool_id__in={v.tool_id for v in versions})
                      .values_list("tool_id", flat=True))
    for version in versions:
        tenant_id = version.tool.tenant_id
        if tenant_id not in beside:
            beside[tenant_id] = _current_definitions(_neighbours(version.tool))
        others = [d for tool_id, d in beside[tenant_id].items() if tool_id != version.tool_id]
        findings = lint_tool(lint_definition(version), others=others, deployment=deployment)
        toolsets = _toolset_findings(version.tool.toolsets.all(), replace=version) \
            if version.tool_id in in_toolsets else []
        found[version.pk] = sorted_findings([*findings, *toolsets])
    return found


def catalog_findings(*, tenant_id: int | None = None) -> list[Finding]:
    """Lint of every draft and published version (of one tenant's visible tools when given),
    each against the tools a model may see beside it, and of the toolsets (that tenant's and
    the shared ones when given)."""
    tools = tools_visible_to_tenant(tenant=tenant_id) if tenant_id else Tool.objects.all()
    toolsets = Toolset.objects.all()
    if tenant_id:
        toolsets = toolsets.filter(Q(tenant__isnull=True) | Q(tenant_id=tenant_id))
    current = _current_definitions(Tool.objects.all())
    deployment = lint_deployment()
    owner_of = dict(Tool.objects.values_list("pk", "tenant_id"))
    findings: list[Finding] = []
    for version in ToolVersion.objects.filter(
        tool__in=tools, status__in=[VersionStatus.DRAFT, VersionStatus.PUBLISHED]
    ).select_related("tool"):
        # Beside a tenant's tool: its tenant's and the shared ones; beside a shared tool, all
        # tools, but only the viewing tenant's when scoped (lint never names another's).
        owner = version.tool.tenant_id or tenant_id
        neighbours = [
            d for tool_id, d in current.items()
            if tool_id != version.tool_id and (owner is None or owner_of[tool_id] in (None, owner))
        ]
        findings += lint_tool(lint_definition(version), others=neighbours, deployment=deployment)
    findings += _toolset_findings(toolsets)
    return sorted_findings(findings)


def version_by_number(*, tool: Tool, number: int) -> ToolVersion | None:
    return ToolVersion.objects.select_related("tool").filter(tool=tool, number=number).first()


def tools_suspended_by_drift(*, tenant_id: int) -> dict[int, bool]:
    """Ids of the tenant's tools with an open drift finding on an upstream that suspends drifted
    tools (calls to them are refused until the finding is reviewed), each with whether a change
    was found (False when every open finding says only that the check could not compare it)."""
    suspended: dict[int, bool] = {}
    for tool_id, kind in (
        DriftFinding.objects.for_tenant(tenant_id)
        .filter(reviewed_at__isnull=True, tool__isnull=False, upstream__suspend_drifted_tools=True)
        .values_list("tool_id", "kind")
    ):
        suspended[tool_id] = suspended.get(tool_id, False) or kind != DriftKind.INCOMPLETE
    return suspended


def with_open_drift(tools: QuerySet[Tool]) -> QuerySet[Tool]:
    """`tools`, each annotated with `open_drift`: how many open drift findings it has."""
    open_findings = (
        DriftFinding.objects.filter(tool=OuterRef("pk"), reviewed_at__isnull=True)
        .order_by().values("tool").annotate(n=Count("pk")).values("n")
    )
    return tools.annotate(open_drift=Coalesce(Subquery(open_findings, output_field=IntegerField()), 0))


@dataclass(frozen=True)
class UpstreamDrift:
    upstream_id: int
    upstream: str  # as upstream_label names it
    open_findings: int
    tools: list[str]


def open_drift_by_upstream(*, tenant_id: int | None) -> list[UpstreamDrift]:
    """Open drift findings per upstream with the server tools they are about, most first;
    every tenant's when `tenant_id` is None, else only that tenant's findings."""
    findings = DriftFinding.objects.filter(reviewed_at__isnull=True)
    if tenant_id is not None:
        findings = findings.filter(tenant_id=tenant_id)
    labels: dict[int, str] = {}
    counts: dict[int, int] = {}
    tools: dict[int, list[str]] = {}
    for upstream_id, name, slug, tool in findings.order_by("upstream_tool").values_list(
        "upstream_id", "upstream__name", "upstream__tenant__slug", "upstream_tool"
    ):
        labels[upstream_id] = upstream_label(name=name, tenant_slug=slug)
        counts[upstream_id] = counts.get(upstream_id, 0) + 1
        if tool not in tools.setdefault(upstream_id, []):
            tools[upstream_id].append(tool)
    rows = [UpstreamDrift(pk, labels[pk], counts[pk], tools[pk]) for pk in labels]
    return sorted(rows, key=lambda r: (-r.open_findings, r.upstream))
