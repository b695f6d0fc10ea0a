"""acme's agent, with the shipping MCP server on loopback (the root conftest's `shipping`)
registered as acme's upstream `shipping`, and helpers to import and publish its tools and to
check it for drift."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import TestCase

from apps.tenancy.models import Agent
from apps.upstreams.models import Upstream
from apps.upstreams.services import upstream_save
from tests.factories import AgentFactory, TenantFactory, UpstreamFactory
from tests.mcp_upstream import McpUpstream, free_port


@pytest.fixture
def agent(db, shipping: McpUpstream) -> Agent:
    """acme's agent, and acme's upstream of kind mcp at the shipping server, with its key."""
    agent = AgentFactory(tenant=TenantFactory(slug="acme"), name="helper")
    UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=shipping.url)
    return agent


def upstream_gone(name: str) -> None:
    """The upstream `name` now points at a port nobody listens on, saved as an operator saves it
    and committed (so every process's memo of upstreams drops what it held)."""
    upstream = Upstream.objects.get(name=name)
    upstream.base_url = f"http://127.0.0.1:{free_port()}/mcp"
    with TestCase.captureOnCommitCallbacks(execute=True):
        upstream_save(upstream=upstream, actor="test")


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
