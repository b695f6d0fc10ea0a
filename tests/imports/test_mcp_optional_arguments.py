"""Null means "leave it out" for MCP tools too: a server's optional argument stays optional when
imported, and an argument the model sets to null is not sent, also by versions imported before
(every property required, optional ones nullable). Against the SDK's own server on loopback,
with a tool shaped like mcp-server-git's `git_log`, whose optional integer refuses null."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.catalog.models import DriftFinding, ToolVersion
from apps.imports.mcp_tools import draft_of_tool
from apps.tenancy.services import agent_key_issue
from tests.gateway.conftest import invoke
from tests.imports.conftest import import_mcp, sync_upstreams

pytestmark = pytest.mark.django_db

# What an import made of git_log's inputSchema before optional arguments stayed optional.
STRICT_PARAMETERS = {
    "type": "object",
    "properties": {"repo_path": {"type": "string", "title": "Repo Path"},
                   "max_count": {"type": ["integer", "null"], "title": "Max Count", "default": 10}},
    "required": ["repo_path", "max_count"],
    "additionalProperties": False,
}


@pytest.fixture
def git_log(shipping) -> list[dict[str, Any]]:
    """The server lists git_log; each call's arguments, as the server got them, are recorded."""
    calls: list[dict[str, Any]] = []

    def git_log(repo_path: str, max_count: int = 10) -> dict[str, Any]:
        """Shows the commit logs."""
        calls.append({"repo_path": repo_path, "max_count": max_count})
        return {"repo_path": repo_path, "commits": max_count}

    shipping.add_tool(git_log, annotations={"readOnlyHint": True})
    return calls


@pytest.fixture
def api(agent) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=agent).secret}")
    return client


def test_an_imported_tool_keeps_the_servers_required_and_optional_arguments(agent, git_log):
    # when
    import_mcp("--tools", "git_log")

    # then: only what the server requires is required; the optional integer stays an integer
    version = ToolVersion.objects.get(tool__name="git_log")
    assert version.strict is False
    assert version.parameters["required"] == ["repo_path"]
    assert version.parameters["properties"]["max_count"]["type"] == "integer"
    assert version.parameters["additionalProperties"] is False
    assert version.executor_config == {"upstream": "shipping", "tool": "git_log"}


@pytest.mark.parametrize("arguments", [
    {"repo_path": "/srv/repo"}, {"repo_path": "/srv/repo", "max_count": None},
])
def test_an_optional_argument_left_out_or_null_is_not_sent(agent, git_log, api, arguments):
    # given
    import_mcp("--tools", "git_log", "--publish", "--grant", "helper")

    # when
    body = invoke(api, "git_log", arguments).json()

    # then: the server used its own default
    assert (body["status"], body["data"]) == ("ok", {"repo_path": "/srv/repo", "commits": 10}), body
    assert git_log == [{"repo_path": "/srv/repo", "max_count": 10}]


def test_a_version_imported_strict_before_sends_no_null_either(agent, git_log, api):
    # given: git_log as an import made it before, every property required, optional ones nullable
    import_mcp("--tools", "git_log", "--publish", "--grant", "helper")
    ToolVersion.objects.filter(tool__name="git_log").update(parameters=STRICT_PARAMETERS, strict=True)

    # when: the model says "not given" as the strict schema tells it to
    body = invoke(api, "git_log", {"repo_path": "/srv/repo", "max_count": None}).json()

    # then
    assert body["status"] == "ok", body
    assert git_log == [{"repo_path": "/srv/repo", "max_count": 10}]


def test_a_null_the_config_lists_in_send_null_is_sent(agent, git_log, api):
    # given: a curator said the server takes null for max_count (this one does not)
    import_mcp("--tools", "git_log", "--publish", "--grant", "helper")
    ToolVersion.objects.filter(tool__name="git_log").update(
        parameters=STRICT_PARAMETERS, executor_config={"upstream": "shipping", "tool": "git_log",
                                                       "send_null": ["/max_count"]},
    )

    # when
    body = invoke(api, "git_log", {"repo_path": "/srv/repo", "max_count": None}).json()

    # then: the null went out, and the server refused it
    assert (body["status"], body["kind"]) == ("error", "upstream_error"), body
    assert "max_count" in body["message"]
    assert git_log == []


def test_a_version_imported_strict_before_shows_no_drift_and_reimports_unchanged(agent, git_log):
    # given: git_log imported and published before optional arguments stayed optional
    import_mcp("--tools", "git_log", "--publish")
    ToolVersion.objects.filter(tool__name="git_log").update(parameters=STRICT_PARAMETERS, strict=True)

    # when
    checked = sync_upstreams("--upstream", "shipping")
    imported = import_mcp("--tools", "git_log")

    # then: the server did not change, so nothing is reported and no draft is made
    assert not DriftFinding.objects.exists(), checked
    assert "git_log: unchanged" in imported
    assert ToolVersion.objects.filter(tool__name="git_log").count() == 1


def test_a_server_that_lists_a_nullable_argument_may_be_sent_its_null():
    # given: a server that says null is a value of `milestone` (clearing it)
    definition = {"name": "update_issue", "inputSchema": {
        "type": "object", "required": ["number"],
        "properties": {"number": {"type": "integer"},
                       "milestone": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                       "title": {"type": "string"}}}}

    # when
    draft = draft_of_tool(definition, upstream="tracker")

    # then: its null is sent; the others' is left out
    assert draft.executor_config["send_null"] == ["/milestone"]
    assert draft.parameters["required"] == ["number"]
    assert draft.parameters["properties"]["title"] == {"type": "string"}


def test_a_reimport_replaces_send_null_with_what_the_server_says_now(agent, shipping):
    # given: imported when the server took null for `milestone`
    def update_issue(number: int, milestone: int | None = None) -> str:
        """Changes an issue."""
        return "changed"

    def update_issue_now(number: int, milestone: int = 0) -> str:
        """Changes an issue."""
        return "changed"

    shipping.add_tool(update_issue)
    import_mcp("--tools", "update_issue")
    assert ToolVersion.objects.get().executor_config["send_null"] == ["/milestone"]

    # when: the server no longer does
    shipping.change_tool("update_issue", function=update_issue_now)
    import_mcp("--tools", "update_issue")

    # then
    latest = ToolVersion.objects.get(number=2)
    assert latest.executor_config == {"upstream": "shipping", "tool": "update_issue"}
    assert latest.parameters["properties"]["milestone"]["type"] == "integer"
