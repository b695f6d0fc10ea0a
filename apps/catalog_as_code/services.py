"""Writes of the catalog as code: a plan (plan.py, platform_plan.py) made through the same
services the admin uses, so each step is validated, linted before publishing and audited as
if a curator (or, for the platform's document, a superuser) had clicked it."""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.catalog.models import Tool, Toolset, ToolVersion
from apps.catalog.selectors import tool_visible_by_name, version_by_number
from apps.catalog.services import (
    tool_save,
    toolset_delete,
    toolset_save,
    version_create_draft,
    version_deprecate,
    version_publish,
    version_retire,
    version_save_draft,
)
from apps.tenancy.models import Agent, Grant, Tenant, TenantPolicy
from apps.tenancy.selectors import agent_by_name, tenant_by_slug
from apps.tenancy.services import (
    agent_save,
    grant_delete,
    grant_save,
    tenant_policy_delete,
    tenant_policy_save,
    tenant_save,
)
from apps.upstreams.models import McpLauncher, Upstream, owned_by
from apps.upstreams.services import credential_declare, upstream_save

from .document import Problem, problems_of
from .platform_plan import AgentSave, SharedGrantDelete, SharedGrantSave, TenantSave
from .selectors import grant_by_tool_and_agent, tenant_policy_by_tool
from .steps import (
    DraftCreate,
    DraftEdit,
    GrantDelete,
    GrantSave,
    Plan,
    PolicyDelete,
    PolicySave,
    StatusChange,
    Step,
    ToolCreate,
    ToolsetDelete,
    ToolsetSave,
    ToolUpdate,
    UpstreamSave,
)


def catalog_document_apply(
    *, tenant: Tenant | None, plan: Plan, actor: str, note: str, commit: bool = True
) -> tuple[Problem, ...]:
    """Make every step of `plan` for `tenant` (None: the platform's document, which only the
    platform applies: the command line, never a tenant's staff), in one transaction.

    A step a service refuses (ValidationError) becomes a problem at the step's YAML path,
    and later steps that need one of its tools are skipped. When there is any problem, or
    `commit` is False (a dry run that still runs every check), the transaction is rolled
    back: nothing is written, no audit event is kept and no cache is invalidated.
    """
    problems: list[Problem] = []
    refused_tools: set[str] = set()
    with transaction.atomic():
        for step in plan.steps:
            if step.tools & refused_tools:
                continue
            try:
                with transaction.atomic():
                    _MAKERS[type(step)](step, tenant, actor, note)
            except ValidationError as error:
                problems += problems_of(step.path, error)
                refused_tools |= step.tools
        if problems or not commit:
            transaction.set_rollback(True)
    return tuple(problems)


def _tool(tenant: Tenant | None, name: str) -> Tool:
    if tenant is None:
        tool = Tool.objects.filter(tenant__isnull=True, name=name).first()
    else:
        tool = tool_visible_by_name(tenant=tenant, name=name)
    if tool is None:
        raise ValidationError(f"No tool named {name} among this tenant's and the shared ones.")
    return tool


def _own_tool(tenant: Tenant | None, name: str) -> Tool:
    tool = _tool(tenant, name)
    if tool.tenant_id != (tenant.pk if tenant else None):
        raise ValidationError(f"{name} is a shared tool; a tenant's file cannot change it.")
    return tool


def _version(tenant: Tenant | None, tool_name: str, number: int) -> ToolVersion:
    version = version_by_number(tool=_own_tool(tenant, tool_name), number=number)
    if version is None:
        raise ValidationError(f"{tool_name} has no version {number}.")
    return version


def _agent(tenant: Tenant, name: str | None) -> Agent | None:
    if name is None:
        return None
    agent = agent_by_name(tenant=tenant, name=name)
    if agent is None:
        raise ValidationError(f"This tenant has no agent named {name}.")
    return agent


def _tool_create(step: ToolCreate, tenant: Tenant | None, actor: str, note: str) -> None:
    tool_save(tool=Tool(tenant=tenant, name=step.name, summary=step.summary), actor=actor)


def _tool_update(step: ToolUpdate, tenant: Tenant | None, actor: str, note: str) -> None:
    tool = _own_tool(tenant, step.name)
    tool.summary = step.summary
    tool.replaced_by = _tool(tenant, step.replaced_by) if step.replaced_by else None
    tool_save(tool=tool, actor=actor)


def _draft_create(step: DraftCreate, tenant: Tenant | None, actor: str, note: str) -> None:
    draft = version_create_draft(tool=_own_tool(tenant, step.tool), actor=actor, **step.content)
    if draft.number != step.number:
        raise ValidationError(
            f"The new draft became v{draft.number}, not v{step.number}: someone added a version of "
            f"{step.tool} meanwhile. Look at the plan again."
        )


def _draft_edit(step: DraftEdit, tenant: Tenant | None, actor: str, note: str) -> None:
    version = _version(tenant, step.tool, step.number)
    for name, value in step.content.items():
        setattr(version, name, value)
    version_save_draft(version=version, actor=actor, note=note)


_STATUS_SERVICES: dict[str, Callable[..., ToolVersion]] = {
    "published": version_publish, "deprecated": version_deprecate, "retired": version_retire,
}


def _status_change(step: StatusChange, tenant: Tenant | None, actor: str, note: str) -> None:
    _STATUS_SERVICES[step.to](version=_version(tenant, step.tool, step.number), actor=actor, note=note)


def _toolset_save(step: ToolsetSave, tenant: Tenant | None, actor: str, note: str) -> None:
    toolset = Toolset.objects.filter(tenant=tenant, name=step.name).first() or Toolset(
        tenant=tenant, name=step.name
    )
    toolset.description = step.description
    toolset_save(
        toolset=toolset, tools=[_tool(tenant, name) for name in step.members],
        phases={phase: [_tool(tenant, name) for name in names] for phase, names in step.phases.items()},
        gates=step.gates, actor=actor,
    )


def _toolset_delete(step: ToolsetDelete, tenant: Tenant | None, actor: str, note: str) -> None:
    toolset = Toolset.objects.filter(tenant=tenant, name=step.name).first()
    if toolset is not None:
        toolset_delete(toolset=toolset, actor=actor)


def _save_grant(step: GrantSave | SharedGrantSave, tenant: Tenant, actor: str, *, by_platform: bool) -> None:
    tool, agent = _tool(tenant, step.tool), _agent(tenant, step.agent)
    grant = grant_by_tool_and_agent(tenant=tenant, tool=tool, agent=agent) or Grant(
        tenant=tenant, agent=agent, tool=tool
    )
    grant.pinned_version = None
    if step.pinned_version is not None:
        grant.pinned_version = version_by_number(tool=tool, number=step.pinned_version)
        if grant.pinned_version is None:
            raise ValidationError({"pinned_version": f"{step.tool} has no version {step.pinned_version}."})
    grant_save(grant=grant, actor=actor, by_platform=by_platform)


def _grant_save(step: GrantSave, tenant: Tenant, actor: str, note: str) -> None:
    # A tenant's file speaks for the tenant: it cannot grant (or re-pin) a shared tool.
    _save_grant(step, tenant, actor, by_platform=False)


def _grant_delete(step: GrantDelete, tenant: Tenant, actor: str, note: str) -> None:
    tool, agent = _tool(tenant, step.tool), _agent(tenant, step.agent)
    grant = grant_by_tool_and_agent(tenant=tenant, tool=tool, agent=agent)
    if grant is not None:
        grant_delete(grant=grant, actor=actor)


def _policy_save(step: PolicySave, tenant: Tenant, actor: str, note: str) -> None:
    tool = _tool(tenant, step.tool) if step.tool else None
    policy = tenant_policy_by_tool(tenant=tenant, tool=tool) or TenantPolicy(tenant=tenant, tool=tool)
    for name, value in step.limits.items():
        setattr(policy, name, value)
    tenant_policy_save(policy=policy, actor=actor)


def _policy_delete(step: PolicyDelete, tenant: Tenant, actor: str, note: str) -> None:
    policy = tenant_policy_by_tool(tenant=tenant, tool=_tool(tenant, step.tool) if step.tool else None)
    if policy is not None:
        tenant_policy_delete(policy=policy, actor=actor)


def _tenant(slug: str) -> Tenant:
    tenant = tenant_by_slug(slug=slug)
    if tenant is None:
        raise ValidationError(f"No tenant {slug}.")
    return tenant


def _tenant_save(step: TenantSave, tenant: None, actor: str, note: str) -> None:
    saved = tenant_by_slug(slug=step.slug) or Tenant(slug=step.slug)
    saved.name, saved.active = step.name, step.active
    tenant_save(tenant=saved, actor=actor)


def _agent_save(step: AgentSave, tenant: None, actor: str, note: str) -> None:
    owner = _tenant(step.tenant)
    agent = agent_by_name(tenant=owner, name=step.name) or Agent(tenant=owner, name=step.name)
    agent.description, agent.active = step.description, step.active
    agent_save(agent=agent, actor=actor)


def _upstream_save(step: UpstreamSave, tenant: Tenant | None, actor: str, note: str) -> None:
    upstream = Upstream.objects.filter(owned_by(tenant.pk if tenant else None), name=step.name).first() \
        or Upstream(tenant=tenant, name=step.name)
    for name, value in step.settings.items():
        setattr(upstream, name, value)
    upstream.launcher, upstream.launcher_args = _launcher(step.launcher), list(step.launcher_args)
    upstream.credential = None
    if step.credential is not None:
        upstream.credential = credential_declare(
            tenant=tenant, name=step.credential["name"], kind=step.credential["kind"],
            field=step.credential["field"], actor=actor,
        )
    upstream_save(upstream=upstream, actor=actor)


def _launcher(name: str | None) -> McpLauncher | None:
    if name is None:
        return None
    launcher = McpLauncher.objects.filter(name=name).first()
    if launcher is None:
        raise ValidationError({"launcher": (
            f"No launcher {name!r} on this installation. Launchers are the platform's: an operator "
            "registers it first (manage.py add_mcp_launcher, or the admin as a superuser)."
        )})
    return launcher


def _shared_grant_save(step: SharedGrantSave, tenant: None, actor: str, note: str) -> None:
    # The platform's file speaks for the platform, which alone grants shared tools.
    _save_grant(step, _tenant(step.tenant), actor, by_platform=True)


def _shared_grant_delete(step: SharedGrantDelete, tenant: None, actor: str, note: str) -> None:
    _grant_delete(GrantDelete(path=step.path, text=step.text, tool=step.tool, agent=step.agent),
                  _tenant(step.tenant), actor, note)


_MAKERS: dict[type[Step], Callable[..., None]] = {
    ToolCreate: _tool_create, ToolUpdate: _tool_update, DraftCreate: _draft_create,
    DraftEdit: _draft_edit, StatusChange: _status_change, ToolsetSave: _toolset_save,
    ToolsetDelete: _toolset_delete, GrantSave: _grant_save, GrantDelete: _grant_delete,
    PolicySave: _policy_save, PolicyDelete: _policy_delete,
    TenantSave: _tenant_save, AgentSave: _agent_save, UpstreamSave: _upstream_save,
    SharedGrantSave: _shared_grant_save, SharedGrantDelete: _shared_grant_delete,
}
