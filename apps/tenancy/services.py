"""Writes of the tenancy app: tenants, agents, agent keys, grants, tenant policies and session
tokens."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone

from apps.audit.services import audit_record, audited_save
from apps.common.catalog_generation import catalog_changed

from .keys import digest_of, generate_key, split_key
from .models import Agent, AgentKey, Grant, StaffScope, TaskToolOpening, Tenant, TenantPolicy
from .sessions import SessionClaims, sign_session

# How long "this prefix is not usable" is remembered; matches the positive cache lifetime
# of the authentication so a stale entry can never outlive the refusal.
_REFUSED_KEY_TTL_S = 300


@dataclass(frozen=True)
class IssuedKey:
    key: AgentKey
    secret: str  # the full key: shown once, never stored


def agent_key_cache_key(prefix: str) -> str:
    return f"toolhub:agent-key:{prefix}"


def _forget_keys(prefixes: Iterable[str], *, refused: bool) -> None:
    """Drop cached key lookups once the transaction commits.

    A refusal is written as a negative entry rather than deleted: the authentication only
    `add`s to the cache, so a request that read the row just before the commit cannot put
    the old, usable entry back.
    """
    names = [agent_key_cache_key(p) for p in prefixes]
    if not names:
        return
    if refused:
        transaction.on_commit(lambda: cache.set_many(dict.fromkeys(names, {}), _REFUSED_KEY_TTL_S))
    else:
        transaction.on_commit(lambda: cache.delete_many(names))


def agent_key_issue(*, agent: Agent, label: str = "", actor: str = "system") -> IssuedKey:
    """Create a key for an agent. Writes the key and an audit event; returns the secret once."""
    full, prefix, digest = generate_key()
    with transaction.atomic():
        key = AgentKey.objects.create(
            tenant_id=agent.tenant_id, agent=agent, label=label, prefix=prefix, digest=digest
        )
        audit_record(
            tenant_id=agent.tenant_id, actor=actor, action="agent_key.issue", target=key,
            data={"agent": agent.name, "prefix": prefix, "label": label},
        )
    return IssuedKey(key=key, secret=full)


def agent_key_install(*, agent: Agent, key: str, label: str, actor: str) -> AgentKey:
    """Store a key made outside ToolHub's generator (the demo's, derived from SECRET_KEY) for
    `agent`, once: the key already stored under its prefix is returned as it is (active or
    revoked). Writes the key (its digest, never the secret) and an audit event, and drops a
    cached "no such key" for its prefix once committed. Raises ValueError for a key not
    shaped like an agent key."""
    prefix = split_key(key)
    if prefix is None:
        raise ValueError("The key is not shaped like an agent key.")
    with transaction.atomic():
        existing = AgentKey.objects.filter(prefix=prefix).first()
        if existing is not None:
            return existing
        created = AgentKey.objects.create(
            tenant_id=agent.tenant_id, agent=agent, label=label, prefix=prefix, digest=digest_of(key)
        )
        audit_record(
            tenant_id=agent.tenant_id, actor=actor, action="agent_key.issue", target=created,
            data={"agent": agent.name, "prefix": prefix},
        )
        _forget_keys([prefix], refused=False)
    return created


def agent_key_revoke(*, key: AgentKey, actor: str, note: str = "") -> AgentKey:
    """Revoke a key now; requests with it are refused from the next one on.

    Writes `revoked_at` (only if the key was active) and an audit event; a key that was
    already revoked is returned unchanged.
    """
    with transaction.atomic():
        updated = AgentKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if updated:
            audit_record(
                tenant_id=key.tenant_id, actor=actor, action="agent_key.revoke", target=key,
                note=note, data={"prefix": key.prefix},
            )
        _forget_keys([key.prefix], refused=True)
    key.refresh_from_db()
    return key


def agent_get_or_create(*, tenant: Tenant, name: str, actor: str = "system") -> Agent:
    """The agent of this name in the tenant, created (and audited) when missing."""
    with transaction.atomic():
        agent, created = Agent.objects.get_or_create(tenant=tenant, name=name)
        if created:
            audit_record(tenant_id=tenant.pk, actor=actor, action="agent.create", target=agent)
    return agent


def agent_save(*, agent: Agent, actor: str) -> Agent:
    """Create or update an agent. Writes it and an audit event; a deactivated agent's keys
    stop working on the next request, a reactivated agent's keys work again."""
    creating = agent.pk is None
    audited_save(
        agent, tenant_id=agent.tenant_id, actor=actor, action="agent.create" if creating else "agent.update",
        data={"name": agent.name, "active": agent.active},
    )
    if not creating:
        prefixes = AgentKey.objects.filter(agent=agent).values_list("prefix", flat=True)
        _forget_keys(list(prefixes), refused=not agent.active)
    return agent


def tenant_save(*, tenant: Tenant, actor: str) -> Tenant:
    """Create or update a tenant. Writes it and an audit event; deactivating a tenant
    refuses all its agents' keys from the next request on."""
    creating = tenant.pk is None
    audited_save(
        tenant, tenant_is_target=True, actor=actor, action="tenant.create" if creating else "tenant.update",
        data={"slug": tenant.slug, "active": tenant.active},
    )
    if not creating:
        prefixes = AgentKey.objects.filter(tenant=tenant).values_list("prefix", flat=True)
        _forget_keys(list(prefixes), refused=not tenant.active)
    return tenant


def _policy_data(policy: TenantPolicy) -> dict[str, Any]:
    return {
        "tool": policy.tool.name if policy.tool is not None else None,
        "rate_limit_per_minute": policy.rate_limit_per_minute,
        "task_call_budget": policy.task_call_budget,
        "daily_quota_per_subject": policy.daily_quota_per_subject,
        "requires_approval": policy.requires_approval,
        "rule_overrides": policy.rule_overrides,
        "open_on_request": policy.open_on_request,
        "max_opened_per_task": policy.max_opened_per_task,
    }


def _save_changing_catalog(
    row: models.Model, *, tenant_id: int, actor: str, action: str, data: dict[str, Any]
) -> None:
    """Validate and save a row agents' catalogs depend on (a policy, a grant), with its audit
    event; their caches are invalidated once committed."""
    verb = "create" if row.pk is None else "update"
    with transaction.atomic():
        audited_save(row, tenant_id=tenant_id, actor=actor, action=f"{action}.{verb}", data=data)
        catalog_changed()


def _delete_changing_catalog(
    row: models.Model, *, tenant_id: int, actor: str, action: str, data: dict[str, Any]
) -> None:
    with transaction.atomic():
        audit_record(tenant_id=tenant_id, actor=actor, action=f"{action}.delete", target=row, data=data)
        row.delete()
        catalog_changed()


def tenant_policy_save(*, policy: TenantPolicy, actor: str) -> TenantPolicy:
    """Create or update a tenant policy. Validates it (ValidationError), writes it and an
    audit event, and invalidates the catalog caches once committed."""
    _save_changing_catalog(
        policy, tenant_id=policy.tenant_id, actor=actor, action="tenant_policy", data=_policy_data(policy)
    )
    return policy


def tenant_policy_delete(*, policy: TenantPolicy, actor: str) -> None:
    """Delete a tenant policy, with an audit event; the catalog caches are invalidated."""
    _delete_changing_catalog(
        policy, tenant_id=policy.tenant_id, actor=actor, action="tenant_policy", data=_policy_data(policy)
    )


def _grant_data(grant: Grant) -> dict[str, Any]:
    return {
        "agent": grant.agent.name if grant.agent is not None else None,
        "tool": grant.tool.name,
        "pinned_version": grant.pinned_version.number if grant.pinned_version is not None else None,
    }


def grant_save(*, grant: Grant, actor: str, by_platform: bool) -> Grant:
    """Create or update a grant, made by the platform (`by_platform`: a superuser, the seed)
    or by a tenant's staff or catalog file.

    Validates it (ValidationError: a shared tool granted by other than the platform, agent
    or tool of another tenant, pin of another tool or not callable, duplicates), writes it,
    who saved it and an audit event; invalidates the catalog caches once committed.
    """
    if not by_platform and grant.tool_id is not None and grant.tool.tenant_id is None:
        # A shared tool may call with the platform's secrets on any tenant's data: which
        # tenants get it is the platform's decision alone.
        raise ValidationError({"tool": (
            f"{grant.tool.name} is a shared tool: only the platform (a superuser) grants shared "
            "tools, to the tenants it chooses. Nothing was saved; ask the platform's operators to "
            "grant it to this tenant."
        )})
    grant.granted_by, grant.granted_by_platform = actor, by_platform
    _save_changing_catalog(
        grant, tenant_id=grant.tenant_id, actor=actor, action="grant",
        data={**_grant_data(grant), "by_platform": by_platform},
    )
    return grant


def grant_delete(*, grant: Grant, actor: str) -> None:
    """Delete a grant, with an audit event; agents lose the tool on their next request."""
    _delete_changing_catalog(
        grant, tenant_id=grant.tenant_id, actor=actor, action="grant", data=_grant_data(grant)
    )


def session_mint(
    *, tenant_id: int, agent_id: int, subject: str, attributes: dict, ttl_s: int,
    now: datetime | None = None,
) -> tuple[str, datetime]:
    """A signed token binding an end user (subject) to this tenant and agent until it expires.

    Reads and writes nothing: the token carries its claims. `expires_at` is whole seconds,
    the precision the token stores, so the answer never promises more than the token keeps.
    """
    expires_at = (now or timezone.now()).replace(microsecond=0) + timedelta(seconds=ttl_s)
    claims = SessionClaims(
        tenant_id=tenant_id, agent_id=agent_id, subject=subject,
        attributes=dict(attributes), expires_at=expires_at,
    )
    return sign_session(claims), expires_at


def staff_user_scope(*, user: User, tenant_id: int, actor: str) -> StaffScope:
    """Confine a person just added by a tenant's staff to that tenant.

    Writes the staff scope and an audit event in the caller's transaction (the admin's save
    of the user), so a person is never added without their tenant.
    """
    with transaction.atomic():
        scope = StaffScope.objects.create(user=user, tenant_id=tenant_id)
        audit_record(
            tenant_id=tenant_id, actor=actor, action="staff_user.add", target=user,
            data={"username": user.get_username()},
        )
    return scope


@dataclass(frozen=True)
class ToolOpening:
    """A granted tool request_capability opens to the task asking, and why."""

    tenant_id: int
    agent_id: int
    task_id: str
    tool_id: int
    capability: str
    toolset: str = ""
    phase: str = ""


def task_tools_open(*, openings: Iterable[ToolOpening], actor: str) -> list[int]:
    """Open tools to their tasks, each once, each with an audit event; returns the ids of the
    tools opened now (one already open to the task is left as it is)."""
    opened: list[int] = []
    for opening in openings:
        with transaction.atomic():
            row, created = TaskToolOpening.objects.get_or_create(
                tenant_id=opening.tenant_id,
                agent_id=opening.agent_id,
                task_id=opening.task_id,
                tool_id=opening.tool_id,
                defaults={
                    "capability": opening.capability, "toolset": opening.toolset, "phase": opening.phase
                },
            )
            if created:
                audit_record(
                    actor=actor,
                    action="task.tool_opened",
                    target=row,
                    tenant_id=opening.tenant_id,
                    note=f"request_capability: {opening.capability}",
                    data={"task_id": opening.task_id, "tool_id": opening.tool_id,
                          "toolset": opening.toolset, "phase": opening.phase},
                )
                opened.append(opening.tool_id)
    return opened
