"""A starting web process loads the catalogs of the agents that called last, so an agent's
first call to it does not wait for them; what is loaded is still the memo of a catalog
generation, so a change made later is seen by the next call."""

from __future__ import annotations

import pytest
from django.utils import timezone
from prometheus_client import REGISTRY

from apps.catalog.models import VersionStatus
from apps.gateway import agent_catalogs
from apps.gateway.outbound import agent_catalogs_warm
from apps.gateway.selectors import agent_catalog
from apps.tenancy.models import AgentKey, Grant
from apps.tenancy.services import agent_key_issue, grant_delete, grant_save
from tests.factories import AgentFactory, GrantFactory, ToolFactory, ToolVersionFactory, run_python_version

pytestmark = pytest.mark.django_db


def _granted_tool(agent, name: str) -> Grant:
    tool = ToolFactory(tenant=agent.tenant, name=name)
    ToolVersionFactory(tool=tool, status=VersionStatus.PUBLISHED)
    return GrantFactory(tenant=agent.tenant, agent=agent, tool=tool)


def test_a_starting_process_has_the_catalog_of_an_agent_that_called(agent, django_assert_num_queries):
    # given: an agent granted a tool, whose key was used, and one whose key never was
    _granted_tool(agent, "find_things")
    AgentKey.objects.filter(pk=agent_key_issue(agent=agent).key.pk).update(last_used_at=timezone.now())
    silent = AgentFactory(tenant=agent.tenant, name="silent")
    agent_key_issue(agent=silent)

    # when
    agent_catalogs_warm()

    # then: the agent's catalog is in memory (no query); the other's is read on its first call
    with django_assert_num_queries(0):
        catalog = agent_catalog(tenant_id=agent.tenant_id, agent_id=agent.pk)
    assert "find_things" in catalog.callable
    with django_assert_num_queries(6):
        agent_catalog(tenant_id=silent.tenant_id, agent_id=silent.pk)


def test_a_grant_removed_after_the_start_is_seen_by_the_next_call(agent, django_capture_on_commit_callbacks):
    # given: a loaded catalog with a granted tool
    grant = _granted_tool(agent, "find_things")
    AgentKey.objects.filter(pk=agent_key_issue(agent=agent).key.pk).update(last_used_at=timezone.now())
    agent_catalogs_warm()

    # when
    with django_capture_on_commit_callbacks(execute=True):
        grant_delete(grant=grant, actor="test")

    # then
    catalog = agent_catalog(tenant_id=agent.tenant_id, agent_id=agent.pk)
    assert "find_things" not in catalog.callable and "find_things" in catalog.refused


def test_a_starting_process_has_the_code_run_as_its_first_call_sees_it(agent, monkeypatch):
    # given: an agent that called, granted run_python beside a tool
    _granted_tool(agent, "find_things")
    GrantFactory(tenant=agent.tenant, agent=agent, tool=run_python_version(tenant=agent.tenant).tool)
    AgentKey.objects.filter(pk=agent_key_issue(agent=agent).key.pk).update(last_used_at=timezone.now())
    agent_catalogs_warm()
    built: list[str] = []
    monkeypatch.setattr(agent_catalogs, "python_signatures", lambda tools: built.append("signatures") or "")

    # when: the first call reads the catalog as a whole
    visible = agent_catalog(tenant_id=agent.tenant_id, agent_id=agent.pk).visible(None, None)

    # then: run_python lists the tool beside it, without building its description again
    assert "def find_things(" in visible["run_python"].description
    assert built == []


def test_a_tool_granted_after_the_start_is_listed_in_the_code_run(agent, django_capture_on_commit_callbacks):
    # given: a started process that loaded the code run of an agent that called
    GrantFactory(tenant=agent.tenant, agent=agent, tool=run_python_version(tenant=agent.tenant).tool)
    AgentKey.objects.filter(pk=agent_key_issue(agent=agent).key.pk).update(last_used_at=timezone.now())
    agent_catalogs_warm()

    # when: a tool is granted
    tool = ToolFactory(tenant=agent.tenant, name="find_things")
    ToolVersionFactory(tool=tool, status=VersionStatus.PUBLISHED)
    with django_capture_on_commit_callbacks(execute=True):
        grant_save(grant=Grant(tenant=agent.tenant, agent=agent, tool=tool), actor="test", by_platform=False)

    # then: the next call's code run lists it
    visible = agent_catalog(tenant_id=agent.tenant_id, agent_id=agent.pk).visible(None, None)
    assert "def find_things(" in visible["run_python"].description


def test_a_starting_process_starts_at_zero_the_calls_counted_of_what_agents_may_call(agent):
    # given: an agent that called, granted a tool no call of this process has counted
    _granted_tool(agent, "count_things_from_start")
    AgentKey.objects.filter(pk=agent_key_issue(agent=agent).key.pk).update(last_used_at=timezone.now())
    labels = {"tool": "count_things_from_start", "status": "ok", "kind": ""}
    assert REGISTRY.get_sample_value("toolhub_invocations_total", labels) is None

    # when
    agent_catalogs_warm()

    # then: /metrics shows its successful calls from the start, at zero
    assert REGISTRY.get_sample_value("toolhub_invocations_total", labels) == 0.0
