"""acme's agent, with the shipping MCP server on loopback (the root conftest's `shipping`)
registered as acme's upstream `shipping`, and helpers to import and publish its tools and to
check it for drift."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from apps.tenancy.models import Agent
from tests.factories import AgentFactory, TenantFactory, UpstreamFactory
from tests.mcp_upstream import McpUpstream


@pytest.fixture
def agent(db, shipping: McpUpstream) -> Agent:
    """acme's agent, and acme's upstream of kind mcp at the shipping server, with its key."""
    agent = AgentFactory(tenant=TenantFactory(slug="acme"), name="helper")
    UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=shipping.url)
    return agent


def run_command(name: str, *args: str) -> str:
    out = io.StringIO()
    call_command(name, *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def import_mcp(*args: str, tenant: str = "acme") -> str:
    return run_command("import_mcp", "--tenant", tenant, "--upstream", "shipping", *args)


def sync_upstreams(*args: str) -> str:
    return run_command("sync_upstreams", *args)


def sync_upstreams_unreached(*args: str) -> str:
    """What sync_upstreams printed before failing, as it does when a server was not reached."""
    out = io.StringIO()
    with pytest.raises(CommandError, match="could not be reached"):
        call_command("sync_upstreams", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()
