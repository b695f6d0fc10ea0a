"""Invocation rows spread over days, tenants, tools and outcomes, for rollup tests."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.audit.models import Invocation
from apps.tenancy.models import Agent, Tenant
from tests.factories import AgentFactory, TenantFactory, ToolFactory

OUTCOMES = [("ok", ""), ("ok", ""), ("ok", ""), ("empty", ""), ("error", "invalid_args"),
            ("error", "timeout"), ("accepted", "")]


@dataclass
class Log:
    now: datetime
    tenants: list[Tenant]
    agents: list[Agent]

    def add(self, *, tenant: int, tool: str, at: datetime, status: str = "ok", kind: str = "",
            latency_ms: float = 10.0, version: int | None = 1) -> None:
        row = Invocation.objects.create(
            tenant=self.tenants[tenant], agent=self.agents[tenant], task_id="t", call_id="c", tool_name=tool,
            version_number=version, status=status, kind=kind, latency_ms=latency_ms)
        Invocation.objects.filter(pk=row.pk).update(created_at=at)


@pytest.fixture
def log(db) -> Log:
    """Two tenants, their tools, and 1,500 calls over the last 40 days with a seeded spread of
    outcomes and latencies from 0 to 30 s; one tool name no tool has (unknown_tool calls)."""
    tenants = [TenantFactory(slug="acme"), TenantFactory(slug="globex")]
    agents = [AgentFactory(tenant=t, name=f"{t.slug}-bot") for t in tenants]
    for tenant in tenants:
        ToolFactory(name=f"{tenant.slug}_search", tenant=tenant)
        ToolFactory(name=f"{tenant.slug}_cancel", tenant=tenant)
    now = timezone.now()
    rng = random.Random(16)
    rows = []
    for _ in range(1500):
        t = rng.randrange(2)
        tool = rng.choice([f"{tenants[t].slug}_search", f"{tenants[t].slug}_cancel", "made_up_tool"])
        status, kind = rng.choice(OUTCOMES)
        rows.append(Invocation(
            tenant=tenants[t], agent=agents[t], task_id="t", call_id="c", tool_name=tool,
            version_number=None if tool == "made_up_tool" else 1,
            status="error" if tool == "made_up_tool" else status,
            kind="unknown_tool" if tool == "made_up_tool" else kind,
            latency_ms=rng.choice([0.0, 0.01, rng.lognormvariate(3, 1.2), rng.uniform(1, 30_000)]),
        ))
    created = Invocation.objects.bulk_create(rows)
    with connection.cursor() as cursor:
        for row in created:
            cursor.execute("UPDATE audit_invocation SET created_at = %s WHERE id = %s",
                           [now - timedelta(seconds=rng.uniform(0, 40 * 86400)), row.pk])
    return Log(now=now, tenants=tenants, agents=agents)
