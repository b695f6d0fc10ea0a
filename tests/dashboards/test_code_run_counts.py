"""The dashboard counts code runs and the calls their code made (inner calls) in its window,
from raw rows and hourly rollups alike, per tenant for scoped staff."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.audit.models import Invocation
from apps.dashboards.rollups import roll_up_invocations
from apps.dashboards.selectors import dashboard_overview
from apps.ledger.models import LedgerEntry
from apps.tenancy.models import Agent
from tests.factories import AgentFactory, TenantFactory, code_run, inner_call, run_python_version

pytestmark = pytest.mark.django_db

OK = {"status": "ok", "data": []}


def runs_with_calls(agent: Agent, *, hours_ago: float, inner: int, task_id: str) -> LedgerEntry:
    """A run and its `inner` calls, `hours_ago`; and a call of the agent's own beside them."""
    at = timezone.now() - timedelta(hours=hours_ago)
    run = code_run(version=run_python_version(tenant=agent.tenant), agent=agent, code="result = 1",
                   calls=inner, task_id=task_id, at=at)
    for n in range(1, inner + 1):
        inner_call(run=run, n=n, tool="search_orders", envelope=OK, at=at + timedelta(seconds=n))
    own = Invocation.objects.create(tenant=agent.tenant, agent=agent, task_id=task_id, call_id="own",
                                    tool_name="run_python", status="ok", latency_ms=5.0)
    Invocation.objects.filter(pk=own.pk).update(created_at=at)
    return run


@pytest.fixture
def agents() -> tuple[Agent, Agent]:
    acme, globex = TenantFactory(slug="acme"), TenantFactory(slug="globex")
    return AgentFactory(tenant=acme, name="acme-bot"), AgentFactory(tenant=globex, name="globex-bot")


def counts(tenant_id: int | None, window: str) -> tuple[int, int, int]:
    overview = dashboard_overview(tenant_id=tenant_id, window=window)
    return overview.code_runs, overview.inner_calls, overview.calls_total


def test_runs_and_inner_calls_are_counted_in_the_window_per_tenant(agents):
    acme, globex = agents
    runs_with_calls(acme, hours_ago=0.1, inner=3, task_id="a-now")
    runs_with_calls(acme, hours_ago=5, inner=2, task_id="a-today")
    runs_with_calls(acme, hours_ago=50, inner=4, task_id="a-before")  # outside 1d, inside 7d
    runs_with_calls(globex, hours_ago=2, inner=1, task_id="g-today")

    assert counts(acme.tenant_id, "1h") == (1, 3, 4)
    assert counts(acme.tenant_id, "1d") == (2, 5, 7)
    assert counts(acme.tenant_id, "7d") == (3, 9, 12)
    assert counts(None, "1d") == (3, 6, 9)


def test_rolled_up_hours_give_the_same_counts_as_raw_rows(agents):
    acme, globex = agents
    for hours_ago, inner in ((0.2, 2), (3.5, 4), (30, 1), (24 * 6, 5)):
        runs_with_calls(acme, hours_ago=hours_ago, inner=inner, task_id=f"a-{hours_ago}")
    runs_with_calls(globex, hours_ago=8, inner=3, task_id="g-8")
    raw = {(tenant, window): counts(tenant, window) for tenant in (acme.tenant_id, None)
           for window in ("1d", "7d", "30d")}

    roll_up_invocations()

    assert {(tenant, window): counts(tenant, window) for tenant, window in raw} == raw
    assert raw[(acme.tenant_id, "1d")] == (2, 6, 8)


def test_the_card_links_to_the_windows_runs(agents):
    acme, _ = agents
    runs_with_calls(acme, hours_ago=1, inner=2, task_id="a-1")
    client = Client()
    client.force_login(User.objects.create_superuser(username="root", password="pw"))

    page = client.get(reverse("admin:toolhub_dashboard"), {"window": "7d"}).content.decode()

    runs = f"{reverse('admin:ledger_coderun_changelist')}?age=7d"
    assert f'href="{runs}" id="card-code-runs"' in page
    assert "code runs (2 inner calls)" in page
    assert client.get(runs).status_code == 200
