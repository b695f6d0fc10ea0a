"""Fixtures for the invoke API: an agent with a key, tools with test executors, a session."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.catalog.models import Tool, ToolVersion
from apps.tenancy.models import Grant
from apps.tenancy.services import agent_key_issue, session_mint
from tests.factories import AgentFactory, TenantFactory
from tests.gateway.callables import RECONCILE_ANSWERS, RUNS, TIMELINE
from tests.http_upstream import Upstream, http_upstream

QUERY_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for."},
        "user_id": {"type": "string", "description": "Filled from the session."},
    },
    "required": ["query", "user_id"],
    "additionalProperties": False,
}
BOUND_USER = {"user_id": {"source": "session.subject", "policy": "must_match"}}


@pytest.fixture(autouse=True)
def _reset_runs():
    RUNS.clear()
    TIMELINE.clear()
    RECONCILE_ANSWERS.clear()
    yield


@pytest.fixture
def agent(db):
    return AgentFactory(tenant=TenantFactory(slug="acme"), name="helper")


@pytest.fixture
def api(agent) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=agent).secret}")
    return client


@pytest.fixture
def session_for(agent) -> Callable[[str], str]:
    def mint(subject: str, ttl_s: int = 900) -> str:
        token, _ = session_mint(
            tenant_id=agent.tenant_id, agent_id=agent.pk, subject=subject, attributes={}, ttl_s=ttl_s
        )
        return token

    return mint


@pytest.fixture
def publish_tool(agent) -> Callable[..., ToolVersion]:
    """A published tool granted to the agent; keyword arguments override version fields."""

    def publish(name: str, **fields: Any) -> ToolVersion:
        tool = Tool.objects.create(name=name)
        content = {
            "description": f"{name}: a test tool. At most 20 results. Not for changing anything.",
            "parameters": QUERY_SCHEMA,
            "side_effect": "readonly",
            "executor": "python",
            "executor_config": {"callable": "tests.echo"},
            "context_bindings": BOUND_USER,
            "timeout_s": 2.0,
        }
        content.update(fields)
        version = ToolVersion.objects.create(tool=tool, number=1, **content)
        version.status = "published"
        version.published_at = timezone.now()
        version.save()
        Grant.objects.create(tenant=agent.tenant, agent=agent, tool=tool)
        return version

    return publish


def invoke(
    api: APIClient,
    name: str,
    arguments: Any,
    *,
    session: str | None = None,
    task_id: str = "t-1",
    call_id: str = "call_1",
    **extra: Any,
):
    headers = {"HTTP_X_TOOLHUB_SESSION": session} if session else {}
    body = {"task_id": task_id, "call": {"id": call_id, "name": name, "arguments": arguments}, **extra}
    return api.post("/api/v1/invoke", body, format="json", **headers)


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    """A real HTTP upstream on loopback (tests/http_upstream.py), closed after the test."""
    with http_upstream() as running:
        yield running
