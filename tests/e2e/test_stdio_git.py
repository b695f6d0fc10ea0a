"""A second published stdio MCP server, `mcp-server-git` (from PyPI), governed through the real
MCP bridge: the operator's launcher may read one repository the test made and lets upstreams
append arguments; acme's upstream confines the server to that repository (`--repository`);
its tools, imported and published, answer the repository's state through REST invoke. A path
outside the launcher's read paths cannot be read, whether the model names it (the server's own
guard refuses) or the tenant's upstream does (the sandbox does not show it): each time the
agent reads a clean envelope and nothing of that repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from apps.catalog.models import ToolVersion
from tests.agent_tools import agent, api  # noqa: F401
from tests.bridge_server import BridgeServer
from tests.e2e.conftest import wait_for
from tests.gateway.conftest import invoke
from tests.imports.conftest import run_command

pytestmark = pytest.mark.django_db

GIT_SERVER = f"{sys.prefix}/bin/mcp-server-git"
SECRET_MESSAGE = "Plans nobody else may read"


def _git(repository: Path, *args: str) -> str:
    identity = ("-c", "user.name=Ana", "-c", "user.email=ana@example.com")
    done = subprocess.run(["git", *identity, "-C", str(repository), *args], check=True, capture_output=True,
                          text=True)
    return done.stdout.strip()


def _repository(path: Path, *, message: str) -> Path:
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("# Docs\n")
    _git(path, "add", "README.md")
    _git(path, "commit", "-q", "-m", message)
    return path


@pytest.fixture(scope="module")
def repositories(tmp_path_factory) -> tuple[Path, Path]:
    """The repository the launcher may read (a commit, then a file not yet added), and one
    beside it that it may not."""
    root = tmp_path_factory.mktemp("git")
    docs = _repository(root / "docs", message="Add the README")
    (docs / "notes.txt").write_text("to sort\n")
    return docs, _repository(root / "secret", message=SECRET_MESSAGE)


@pytest.fixture
def git_upstream(mcp_bridge, agent, repositories) -> Path:  # noqa: F811
    """The launcher `mcp-server-git`, reading the docs repository only; acme's upstream `git`
    confined to it, git_status and git_log imported, published and granted. Returns the repository."""
    docs, _ = repositories
    run_command("add_mcp_launcher", "mcp-server-git", "--command", GIT_SERVER, "--read", str(docs),
                "--allow-args")
    run_command("add_upstream", "git", "--tenant", "acme", "--kind", "mcp", "--command",
                f"mcp-server-git --repository {docs}")
    run_command("import_mcp", "--tenant", "acme", "--upstream", "git", "--tools", "git_status,git_log",
                "--publish", "--grant", "helper")
    return docs


def text_of(envelope: dict) -> str:
    """The server's answer: its content is one text block."""
    assert envelope["status"] == "ok", envelope
    [block] = envelope["data"]
    return block["text"]


def test_mcp_server_git_answers_the_repositorys_state_through_rest_invoke(git_upstream, api):  # noqa: F811
    # when
    status = invoke(api, "git_status", {"repo_path": str(git_upstream)}, call_id="c1").json()
    log = invoke(api, "git_log", {"repo_path": str(git_upstream), "max_count": 5}, call_id="c2").json()

    # then: both readonly, both answering what the repository holds
    versions = ToolVersion.objects.filter(tool__name__in=["git_status", "git_log"])
    assert {(v.status, v.side_effect, v.executor_config["upstream"]) for v in versions} == {
        ("published", "readonly", "git")
    }
    assert "On branch main" in text_of(status) and "notes.txt" in text_of(status)
    assert f"Commit: {_git(git_upstream, 'rev-parse', 'HEAD')}" in text_of(log)
    assert "Message: Add the README" in text_of(log)


def test_a_repository_the_model_names_outside_the_read_paths_is_refused_by_the_server(
    git_upstream, api, repositories  # noqa: F811
):
    _, secret = repositories

    body = invoke(api, "git_log", {"repo_path": str(secret), "max_count": 5}).json()

    assert (body["status"], body["kind"]) == ("error", "upstream_error"), body
    assert body["message"].startswith("git_log failed at its provider, which said (quoted, data only): ")
    assert "is outside the allowed repository" in body["message"]
    assert "calling it again is safe" in body["hint"]
    assert SECRET_MESSAGE not in str(body)


def test_a_repository_the_upstream_names_outside_the_read_paths_is_not_there_for_the_server(
    git_upstream, api, repositories, mcp_bridge: BridgeServer, django_capture_on_commit_callbacks  # noqa: F811
):
    # given: acme's curator points the upstream at a repository the launcher does not list
    _, secret = repositories
    with django_capture_on_commit_callbacks(execute=True):  # the command's change commits
        run_command("add_upstream", "git", "--tenant", "acme", "--kind", "mcp", "--command",
                    f"mcp-server-git --repository {secret}")

    # when
    body = invoke(api, "git_log", {"repo_path": str(secret), "max_count": 5}).json()

    # then: in its sandbox the path does not exist, so the server cannot start; the agent
    # reads what it reads of a server at a URL that is down, and nothing of the repository
    assert (body["status"], body["kind"]) == ("error", "upstream_error"), body
    assert body["message"] == "git_log's external system failed to answer."
    assert "try later" in body["hint"]
    assert SECRET_MESSAGE not in str(body)
    wait_for(lambda: f"{secret} does not exist" in mcp_bridge.log_text(), what="the server's complaint")
