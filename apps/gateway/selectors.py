"""Reads of the gateway: which tools an agent may call, resolved once per catalog generation.

Resolving a name costs several queries (tool, grants, versions, toolsets); on the invoke hot
path it is served from a per-process memo keyed by the catalog generation, so a publish or
a grant change is seen on the next request.
"""

from __future__ import annotations

import threading

from django.db.models import F, Q

from apps.catalog.models import Tool, Toolset, ToolVersion, VersionStatus
from apps.catalog.selectors import tools_suspended_by_drift
from apps.common.builtin_tools import REQUEST_CAPABILITY
from apps.common.catalog_generation import catalog_generation
from apps.common.errors import ForbiddenError, UnavailableError
from apps.tenancy.authentication import AgentPrincipal
from apps.tenancy.models import Grant, TenantPolicy
from apps.tenancy.selectors import task_tool_ids_opened

from .agent_catalogs import AgentCatalog
from .contracts import PolicySpec, VersionSpec
from .executors.mcp.warm import McpUse
from .pipeline.tool_lookup import check_toolset
from .pipeline.tool_lookup import resolve_tool as resolve_tool  # the dry-run console resolves names too
from .request_capability import REQUEST_CAPABILITY_SPEC

_MEMO: dict[tuple[int, int, int], AgentCatalog] = {}
_MEMO_LOCK = threading.Lock()


def agent_catalog(*, tenant_id: int, agent_id: int, generation: int | None = None) -> AgentCatalog:
    """What the agent may call, as of `generation` (read now when not given)."""
    generation = catalog_generation(already_read=generation)
    memo_key = (generation, tenant_id, agent_id)
    found = _MEMO.get(memo_key)
    if found is None:
        found = _load_agent_catalog(tenant_id=tenant_id, agent_id=agent_id)
        with _MEMO_LOCK:
            for stale in [k for k in _MEMO if k[0] != generation]:
                _MEMO.pop(stale, None)
            _MEMO[memo_key] = found
    return found


def _load_agent_catalog(*, tenant_id: int, agent_id: int) -> AgentCatalog:
    grants = {
        g.tool_id: g
        for g in Grant.objects.for_tenant(tenant_id)
        .filter(Q(agent_id=agent_id) | Q(agent__isnull=True))
        .select_related("pinned_version__tool")
        # Tenant-wide grants first, so an agent's own grant (and its pin) wins.
        .order_by(F("agent_id").asc(nulls_first=True))
    }
    tools = Tool.objects.filter(Q(tenant__isnull=True) | Q(tenant_id=tenant_id)).select_related("replaced_by")
    versions_by_tool: dict[int, list[ToolVersion]] = {}
    for listed in (
        ToolVersion.objects.filter(
            tool__in=tools, status__in=[VersionStatus.PUBLISHED, VersionStatus.DEPRECATED]
        )
        .select_related("tool")
        .order_by("tool_id", "-number")
    ):
        versions_by_tool.setdefault(listed.tool_id, []).append(listed)

    suspended = tools_suspended_by_drift(tenant_id=tenant_id)
    callable_: dict[str, VersionSpec] = {}
    refused: dict[str, ForbiddenError | UnavailableError] = {}
    for tool in tools:
        grant = grants.get(tool.pk)
        if grant is None:
            refused[tool.name] = ForbiddenError(
                f"This agent is not granted the tool {tool.name}.",
                hint="Use another tool, or call request_capability to ask the operators for it.",
            )
            continue
        version = grant.pinned_version or next(
            (v for v in versions_by_tool.get(tool.pk, []) if v.status == VersionStatus.PUBLISHED), None
        )
        if version is None or version.status != VersionStatus.PUBLISHED:
            refused[tool.name] = _unavailable(tool, version)
            continue
        if tool.pk in suspended:
            refused[tool.name] = _suspended(tool, changed=suspended[tool.pk])
            continue
        callable_[tool.name] = VersionSpec.from_model(version)
    # The built-in way out, for every agent; it wins over a catalog tool of the same name.
    callable_[REQUEST_CAPABILITY] = REQUEST_CAPABILITY_SPEC
    refused.pop(REQUEST_CAPABILITY, None)

    # Only the tenant's and the shared toolsets, holding only tools this tenant sees: what
    # an error or a hint may name.
    seen = {tool.pk for tool in tools}
    toolsets: dict[str, dict[str, frozenset[str]]] = {}
    gated: dict[str, frozenset[str]] = {}
    for toolset in Toolset.objects.filter(
        Q(tenant__isnull=True) | Q(tenant_id=tenant_id)
    ).prefetch_related("tools", "phases__tools"):
        phases = {"": frozenset(t.name for t in toolset.tools.all() if t.pk in seen)}
        gates: set[str] = set()
        for phase in toolset.phases.all():
            phases[phase.name] = frozenset(t.name for t in phase.tools.all() if t.pk in seen)
            if phase.gates:
                gates |= phases[phase.name]
        toolsets[toolset.name] = phases
        gated[toolset.name] = frozenset(gates)

    all_policies = list(TenantPolicy.objects.for_tenant(tenant_id))
    tenant_wide = next((p for p in all_policies if p.tool_id is None), None)
    policies: dict[int | None, PolicySpec] = {None: PolicySpec.merged(tenant_wide)}
    for policy in all_policies:
        if policy.tool_id is not None:
            policies[policy.tool_id] = PolicySpec.merged(tenant_wide, policy)
    return AgentCatalog(
        callable=callable_, refused=refused, toolsets=toolsets, policies=policies, gated=gated
    )


def _unavailable(tool: Tool, version: ToolVersion | None) -> UnavailableError:
    replacement = tool.replaced_by.name if tool.replaced_by is not None else None
    state = f"version {version.number} is {version.status}" if version else "no version is published"
    hint = (
        f"Use {replacement} instead."
        if replacement
        else "Tell the user this tool is not available now; do not retry it."
    )
    return UnavailableError(f"The tool {tool.name} is unavailable: {state}.", hint=hint)


def _suspended(tool: Tool, *, changed: bool) -> UnavailableError:
    why = (
        "the server behind it changed the tool's definition since it was approved, and a curator "
        "must review the change first" if changed else
        "the last check could not compare the server's definition of it with the approved one, "
        "and it stays suspended until a check does or a curator reviews it"
    )
    until = "a curator has reviewed the change" if changed else "its server has been checked"
    return UnavailableError(
        f"The tool {tool.name} is suspended pending review: {why}.",
        hint=f"Do not retry this tool: it stays unavailable until {until}. "
        "Tell the user it is unavailable for now, or use another tool.",
    )


def visible_tools(
    *, tenant_id: int, agent_id: int, toolset: str | None, phase: str | None, generation: int | None = None
) -> dict[str, VersionSpec]:
    """What this agent may call in this toolset and phase, as of the catalog `generation`
    (read now when not given); raises InvalidArgsError for an unknown toolset or phase."""
    catalog = agent_catalog(tenant_id=tenant_id, agent_id=agent_id, generation=generation)
    check_toolset(catalog, toolset, phase)
    return catalog.visible(toolset, phase)


def mcp_uses(*, limit: int) -> list[McpUse]:
    """The MCP upstreams that published versions of granted tools call, once per calling
    tenant (at most `limit`): the sessions a process opens before its first call needs them.
    A shared tool calls the platform's upstream of that name; a tenant's tool, the tenant's."""
    rows = (
        Grant.objects.filter(tool__versions__status=VersionStatus.PUBLISHED, tool__versions__executor="mcp")
        .order_by("tenant_id", "tool__tenant_id")
        .values_list("tenant_id", "tool__tenant_id", "tool__versions__executor_config__upstream")
        .distinct()
    )
    return [
        McpUse(tenant_id=tenant, owner_id=owner, upstream=str(name)) for tenant, owner, name in rows[:limit]
    ]


def opened_to_task(
    catalog: AgentCatalog, *, principal: AgentPrincipal, task_id: str, name: str
) -> frozenset[str]:
    """{name} when request_capability opened that tool of the agent's to this task, else empty."""
    spec = catalog.callable.get(name)
    if spec is None or not spec.tool_id:
        return frozenset()
    opened = task_tool_ids_opened(tenant_id=principal.tenant_id, agent_id=principal.agent_id, task_id=task_id)
    return frozenset({name}) if spec.tool_id in opened else frozenset()
