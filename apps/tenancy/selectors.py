"""Reads of the tenancy app."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import AnonymousUser, Permission, User
from django.db.models import Q, QuerySet

from .keys import split_key
from .models import USABLE_KEYS, Agent, AgentKey, Grant, StaffScope, TaskToolOpening, Tenant


def tenant_by_slug(*, slug: str) -> Tenant | None:
    return Tenant.objects.filter(slug=slug).first()


def agent_by_name(*, tenant: Tenant, name: str) -> Agent | None:
    return Agent.objects.for_tenant(tenant).filter(name=name).first()


def tool_ids_granted(*, agent: Agent) -> set[int]:
    """Ids of the tools granted to `agent`."""
    return set(Grant.objects.filter(tenant_id=agent.tenant_id, agent=agent).values_list("tool_id", flat=True))


def agent_key_by_prefix(*, prefix: str) -> AgentKey | None:
    """The key with this lookup prefix; a full key is accepted too (its prefix is used)."""
    lookup = split_key(prefix) if prefix.startswith("thk_") else prefix
    if not lookup:
        return None
    return AgentKey.objects.select_related("agent__tenant").filter(prefix=lookup).first()


def staff_tenant_id(*, user: User | AnonymousUser) -> int | None:
    """The tenant a staff user is scoped to, or None when the user has no StaffScope."""
    # An anonymous user asks too (for a scope of no user, which none has): every admin page,
    # the login form included, then needs the database and answers 503 without it.
    scoped = StaffScope.objects.filter(user=user if user.is_authenticated else None)
    return scoped.values_list("tenant_id", flat=True).first()


def permissions_held(*, user: User) -> QuerySet[Permission]:
    """Every permission a user holds, directly or through a group (whether active or not)."""
    return Permission.objects.filter(Q(user=user) | Q(group__user=user)).distinct()



def shared_tool_grants_not_by_platform() -> QuerySet[Grant]:
    """Grants of shared tools the platform did not make: saved by a tenant's staff or catalog
    file, or by someone not recorded (before ToolHub recorded it). Across every tenant."""
    return (
        Grant.objects.filter(tool__tenant__isnull=True)
        .exclude(granted_by_platform=True)
        .select_related("tenant", "agent", "tool")
        .order_by("tenant__slug", "tool__name", "agent__name")
    )


def active_agent(*, tenant_id: int, agent_id: int) -> Agent | None:
    """The tenant's agent, with its tenant; None when it is gone or deactivated."""
    agents = Agent.objects.for_tenant(tenant_id).select_related("tenant")
    return agents.filter(pk=agent_id, active=True).first()


def task_tool_ids_opened(*, tenant_id: int, agent_id: int, task_id: str) -> set[int]:
    """The tools request_capability opened to this task of this agent."""
    return set(
        TaskToolOpening.objects.for_tenant(tenant_id)
        .filter(agent_id=agent_id, task_id=task_id)
        .values_list("tool_id", flat=True)
    )


def _used_keys_latest_first() -> QuerySet[AgentKey]:
    return AgentKey.objects.filter(USABLE_KEYS, last_used_at__isnull=False).order_by("-last_used_at")


def agent_keys_recently_used(*, limit: int) -> list[tuple[str, datetime | None]]:
    """(prefix, last used) of the usable keys used most recently, at most `limit`, the most
    recent first."""
    return list(_used_keys_latest_first().values_list("prefix", "last_used_at")[:limit])


def agents_recently_calling(*, limit: int) -> list[tuple[int, int]]:
    """(tenant id, agent id) of the active agents whose keys were used most recently, at most
    `limit`, the most recent first."""
    rows = _used_keys_latest_first().values_list("tenant_id", "agent_id")
    agents: dict[tuple[int, int], None] = {}
    for row in rows.iterator():
        agents.setdefault(row)
        if len(agents) == limit:
            break
    return list(agents)
