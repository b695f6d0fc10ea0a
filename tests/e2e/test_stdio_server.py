"""A published stdio MCP server (`mcp-server-time`, from PyPI) governed end to end: the
operator registers a launcher, a tenant's curator adds it as an upstream, imports, publishes
and grants its tools (from the command line, and in the admin), and an agent calls them
through REST invoke, both adapters and `/mcp` on both wires. The MCP bridge runs as a
deployment runs it (`manage.py mcp_bridge` in a subprocess); the server under bubblewrap."""

from __future__ import annotations

import io
import json
import sys

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from mcp.client.session import ClientSession

from apps.catalog.models import Tool, ToolVersion
from apps.tenancy.models import Grant, StaffScope
from apps.tenancy.services import agent_key_issue
from apps.upstreams.models import McpLauncher, Upstream
from tests.adapters.test_adapters import anthropic_message, openai_message, post_anthropic, post_openai
from tests.agent_tools import agent, api, session_for  # noqa: F401
from tests.mcp.test_mcp import run_client

pytestmark = pytest.mark.django_db(transaction=True)

TIME_SERVER = f"{sys.prefix}/bin/mcp-server-time --local-timezone UTC"
PARIS = {"timezone": "Europe/Paris"}


def _cli(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _staff(username: str, *, tenant=None, superuser: bool = False) -> Client:
    if superuser:
        user = User.objects.create_superuser(username, password="pw")
    else:
        user = User.objects.create_user(username, password="pw", is_staff=True)
        user.user_permissions.set(
            Permission.objects.filter(content_type__app_label__in=["upstreams", "catalog", "tenancy"])
        )
        StaffScope.objects.create(user=user, tenant=tenant)
    client = Client()
    client.force_login(user)
    return client


def _time_answer(envelope: dict) -> dict:
    assert envelope["status"] == "ok", envelope
    return envelope["data"]


def test_mcp_server_time_is_governed_from_the_command_line_and_called_on_every_interface(
    mcp_bridge, live_server, agent, api, session_for  # noqa: F811
):
    # The operator: a launcher. The tenant's curator: an upstream, its tools imported,
    # published and granted.
    registered = _cli("add_mcp_launcher", "mcp-server-time", "--command", TIME_SERVER)
    added = _cli("add_upstream", "clock", "--tenant", "acme", "--kind", "mcp", "--command", "mcp-server-time")
    imported = _cli("import_mcp", "--tenant", "acme", "--upstream", "clock", "--publish", "--grant", "helper")
    session = session_for("u-1")

    rest = api.post(
        "/api/v1/invoke",
        {"task_id": "t-rest", "call": {"id": "c1", "name": "get_current_time", "arguments": PARIS}},
        format="json",
        HTTP_X_TOOLHUB_SESSION=session,
    ).json()
    openai = post_openai(api, openai_message(("call_o", "get_current_time", PARIS)), session=session).json()
    anthropic = post_anthropic(
        api, anthropic_message(("toolu_a", "get_current_time", PARIS)), session=session
    )
    headers = {"Authorization": f"Bearer {agent_key_issue(agent=agent).secret}", "X-ToolHub-Session": session}

    def on(connect: str):
        async def steps(client: ClientSession):
            await getattr(client, connect)()
            return (
                client.protocol_version,
                await client.list_tools(),
                await client.call_tool("get_current_time", PARIS),
            )

        return run_client(f"{live_server.url}/mcp", headers, steps)

    wires = {connect: on(connect) for connect in ("discover", "initialize")}

    assert registered.startswith("Registered launcher mcp-server-time: ")
    assert added == "Created upstream clock of acme.\n"
    assert imported.startswith("Imported the tools of clock for upstream clock (launcher mcp-server-time):")
    assert "get_current_time: new → get_current_time v1 (published)" in imported
    version = ToolVersion.objects.get(tool__name="get_current_time")
    assert (version.status, version.executor, version.executor_config["upstream"]) == (
        "published",
        "mcp",
        "clock",
    )
    assert _time_answer(rest)["timezone"] == "Europe/Paris"
    assert _time_answer(json.loads(openai["messages"][0]["content"]))["timezone"] == "Europe/Paris"
    anthropic_result = anthropic.json()["content"][0]
    assert (anthropic_result["tool_use_id"], anthropic_result["is_error"]) == ("toolu_a", False)
    assert _time_answer(json.loads(anthropic_result["content"]))["timezone"] == "Europe/Paris"
    for connect, (protocol, listed, called) in wires.items():
        assert protocol == ("2025-11-25" if connect == "initialize" else "2026-07-28")
        assert "get_current_time" in {tool.name for tool in listed.tools}
        assert called.is_error is False, called.content
        assert _time_answer(json.loads(called.content[0].text))["timezone"] == "Europe/Paris"


def test_mcp_server_time_is_governed_in_the_admin(mcp_bridge, agent, api, session_for):  # noqa: F811
    root = _staff("root", superuser=True)
    curator = _staff("acme-curator", tenant=agent.tenant)

    # The superuser registers the launcher; the tenant's curator adds the upstream and
    # imports its tools with the "Import tools" page.
    launcher_added = root.post(
        reverse("admin:upstreams_mcplauncher_add"),
        {
            "name": "mcp-server-time",
            "command": TIME_SERVER.replace(" ", "\n"),
            "read_paths": "",
            "write_paths": "",
            "env_names": "",
            "memory_mb": 512,
            "cpu_s": 300,
            "max_processes": 32,
            "max_open_files": 256,
            "idle_stop_s": 300,
        },
    )
    upstream_added = curator.post(
        reverse("admin:upstreams_upstream_add"),
        {
            "name": "clock",
            "kind": "mcp",
            "base_url": "",
            "timeout_s": 10,
            "launcher": McpLauncher.objects.get().pk,
            "launcher_args": "",
            "sync_interval_minutes": 15,
        },
    )
    upstream = Upstream.objects.get()
    import_page = curator.get(reverse("admin:imports_mcp_tools", args=[upstream.pk])).content.decode()
    imported = curator.post(
        reverse("admin:imports_mcp_tools", args=[upstream.pk]), {"tools": ["get_current_time"]}
    )

    assert (launcher_added.status_code, upstream_added.status_code, imported.status_code) == (302, 302, 200)
    assert "<code>get_current_time</code>" in import_page
    draft = ToolVersion.objects.get(tool__name="get_current_time")
    assert (draft.status, draft.side_effect) == ("draft", "readonly")

    # The curator publishes it and grants it to the agent, both in the admin.
    published = curator.post(
        reverse("admin:catalog_toolversion_changelist"),
        {
            "action": "publish",
            "_selected_action": [draft.pk],
        },
    )
    granted = curator.post(
        reverse("admin:tenancy_grant_add"),
        {
            "tool": Tool.objects.get(name="get_current_time").pk,
            "agent": agent.pk,
            "pinned_version": "",
        },
    )
    answer = api.post(
        "/api/v1/invoke",
        {"task_id": "t-admin", "call": {"id": "c1", "name": "get_current_time", "arguments": PARIS}},
        format="json",
        HTTP_X_TOOLHUB_SESSION=session_for("u-1"),
    ).json()

    assert (published.status_code, granted.status_code) == (302, 302), granted.content[:1500]
    assert ToolVersion.objects.get(pk=draft.pk).status == "published"
    assert Grant.objects.filter(tool__name="get_current_time", agent=agent).exists()
    assert _time_answer(answer)["timezone"] == "Europe/Paris"
