"""Shared fixtures: factories live in tests/factories.py; the shipping MCP server on loopback
and its upstream row are here, for every test folder."""

from collections.abc import Iterator

import pytest
import redis.client
from django.core.cache import cache

from apps.tenancy.services import IssuedKey, agent_key_issue
from apps.upstreams.models import Upstream
from tests.bridge_server import BridgeServer, bridge_server
from tests.factories import UpstreamFactory
from tests.mcp_upstream import McpUpstream, mcp_upstream


@pytest.fixture(autouse=True)
def _clear_cache():
    """Each test starts with an empty cache (keys, rate limits, compiled validators)."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def issued(agent) -> IssuedKey:
    """A key issued to the test's agent (each test package says who `agent` is)."""
    return agent_key_issue(agent=agent, label="prod", actor="test")


@pytest.fixture
def cache_round_trips(monkeypatch) -> list[int]:
    """Redis round trips made since the fixture started (a pipeline is one)."""
    trips = [0]
    command, pipeline = redis.client.Redis.execute_command, redis.client.Pipeline.execute

    def counted_command(self, *args, **kwargs):
        if not isinstance(self, redis.client.Pipeline):
            trips[0] += 1
        return command(self, *args, **kwargs)

    def counted_pipeline(self, *args, **kwargs):
        trips[0] += 1
        return pipeline(self, *args, **kwargs)

    monkeypatch.setattr(redis.client.Redis, "execute_command", counted_command)
    monkeypatch.setattr(redis.client.Pipeline, "execute", counted_pipeline)
    return trips


@pytest.fixture
def imports_in_process(monkeypatch):
    """The OpenAPI imports the admin starts run at once in the test's process, through the
    task's own code (as a worker runs it), so the page the admin redirects to shows the report."""
    from apps.imports.tasks import openapi_import_task

    monkeypatch.setattr(openapi_import_task, "delay", lambda run_id: openapi_import_task.apply(args=[run_id]))


@pytest.fixture
def shipping() -> Iterator[McpUpstream]:
    """The shipping MCP server (tests/mcp_upstream.py), real, on a loopback thread of this
    process, stopped after the test."""
    with mcp_upstream() as running:
        yield running


@pytest.fixture
def shipping_upstream(agent, shipping: McpUpstream) -> Upstream:
    """The agent's tenant's upstream `shipping`: that server, with its bearer key SHIPPING_KEY."""
    return UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=shipping.url)


@pytest.fixture(scope="session")
def mcp_bridge_env() -> dict[str, str]:
    """Environment variables for the bridge's subprocess, over the tests' own: override this
    fixture (session-scoped) in a folder's conftest.py to run the bridge otherwise."""
    return {}


@pytest.fixture(scope="session")
def mcp_bridge_server(tmp_path_factory, mcp_bridge_env: dict[str, str]) -> Iterator[BridgeServer]:
    """The MCP bridge (`manage.py mcp_bridge`, tests/bridge_server.py), real, in a subprocess,
    one for the whole test session; its log is `.log_text()`, its scratch root `.scratch`."""
    with bridge_server(tmp_path_factory.mktemp("mcp-bridge"), env=mcp_bridge_env) as running:
        yield running


@pytest.fixture
def mcp_bridge(mcp_bridge_server: BridgeServer, settings) -> BridgeServer:
    """That bridge, with settings.TOOLHUB_MCP_BRIDGE_URL pointing at it for the test."""
    settings.TOOLHUB_MCP_BRIDGE_URL = mcp_bridge_server.url
    return mcp_bridge_server
