"""Writes of the tenancy app: agent keys and session tokens."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from apps.audit.services import audit_record

from .keys import generate_key
from .models import Agent, AgentKey, Tenant
from .sessions import SessionClaims, sign_session


@dataclass(frozen=True)
class IssuedKey:
    key: AgentKey
    secret: str  # the full key: shown once, never stored


def agent_key_cache_key(prefix: str) -> str:
    return f"toolhub:agent-key:{prefix}"


def agent_key_issue(*, agent: Agent, label: str = "", actor: str = "system") -> IssuedKey:
    """Create a key for an agent. Writes the key and an audit event; returns the secret once."""
    full, prefix, digest = generate_key()
    with transaction.atomic():
        key = AgentKey.objects.create(
            tenant_id=agent.tenant_id, agent=agent, label=label, prefix=prefix, digest=digest
        )
        audit_record(
            tenant_id=agent.tenant_id, actor=actor, action="agent_key.issue", target=key,
            data={"agent": agent.name, "prefix": prefix},
        )
    return IssuedKey(key=key, secret=full)


def agent_key_revoke(*, key: AgentKey, actor: str, note: str = "") -> AgentKey:
    """Revoke a key now; requests with it are refused from the next one on."""
    with transaction.atomic():
        updated = AgentKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if updated:
            audit_record(
                tenant_id=key.tenant_id, actor=actor, action="agent_key.revoke", target=key,
                note=note,
            )
        transaction.on_commit(lambda: cache.delete(agent_key_cache_key(key.prefix)))
    key.refresh_from_db()
    return key


def agent_get_or_create(*, tenant: Tenant, name: str) -> Agent:
    agent, _ = Agent.objects.get_or_create(tenant=tenant, name=name)
    return agent


def session_mint(
    *, tenant_id: int, agent_id: int, subject: str, attributes: dict, ttl_s: int,
    now: datetime | None = None,
) -> tuple[str, datetime]:
    """A signed token binding an end user (subject) to this tenant and agent until it expires."""
    expires_at = (now or timezone.now()) + timedelta(seconds=ttl_s)
    claims = SessionClaims(
        tenant_id=tenant_id, agent_id=agent_id, subject=subject,
        attributes=dict(attributes), expires_at=expires_at,
    )
    return sign_session(claims), expires_at
