"""A published stdio MCP server that reads the host's files (mcp-server-git, from PyPI),
given one repository as its read path and argument: it reads that one, and nothing else."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .conftest import VENV_BIN, call, headers_for, launcher, url_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "README").write_text("hello\n")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "The first commit of the bridge's test"], check=True)
    (repo / "README").write_text("hello, changed\n")
    return repo


def test_the_git_server_reads_the_repository_it_is_given(mcp_bridge, repository):
    # Given mcp-server-git confined to a repository the test made
    server = launcher("git", [str(VENV_BIN / "mcp-server-git")], read_paths=[str(repository)],
                      allow_args=True)
    headers = headers_for(server, args=["--repository", str(repository)])
    url = url_for(upstream_id=300, tenant_id=1)

    # When the client asks for the log and the status
    log = call(url, headers, "git_log", {"repo_path": str(repository)})
    status = call(url, headers, "git_status", {"repo_path": str(repository)})

    # Then the server read the repository
    assert not log.is_error, log
    assert "The first commit of the bridge's test" in log.content[0].text
    assert not status.is_error, status
    assert "README" in status.content[0].text


def test_the_git_server_cannot_read_another_repository(mcp_bridge, repository):
    # Given the same server, confined to the test's repository, and ToolHub's own checkout
    server = launcher("git", [str(VENV_BIN / "mcp-server-git")], read_paths=[str(repository)])
    headers = headers_for(server)
    assert (ROOT / ".git").exists()

    # When it is asked about the checkout (its own --repository check is off: no argument)
    answer = call(url_for(upstream_id=301, tenant_id=1), headers, "git_log", {"repo_path": str(ROOT)})

    # Then the checkout is not there to read
    assert answer.is_error, answer
