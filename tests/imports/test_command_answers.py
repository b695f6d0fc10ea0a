"""What the import and drift commands answer an operator: operator wording for a name that
does not exist, a failing exit when no server was reached, and only their own lines."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from apps.catalog.models import DriftFinding
from tests.factories import TenantFactory
from tests.imports.conftest import import_mcp, upstream_gone
from tests.ops.conftest import ROOT


def _manage_in_another_process(*args: str) -> subprocess.CompletedProcess[str]:
    """`manage.py ARGS` as a person runs it, on this test's (committed) database."""
    db = settings.DATABASES["default"]
    credentials = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{credentials}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "DJANGO_SETTINGS_MODULE": "toolhub.settings.test",
        "LOG_LEVEL": "INFO",
    }
    for name in ("LOG_FORMAT", "LOG_PROFILE"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_import_mcp_of_an_unknown_upstream_names_the_known_ones(agent):
    # Given acme, whose MCP upstream is `shipping`
    # When an operator names one that does not exist
    with pytest.raises(CommandError) as refused:
        call_command("import_mcp", "--tenant", "acme", "--upstream", "shiping", stdout=io.StringIO())

    # Then they read what is wrong in their terms, with the names they could use
    assert str(refused.value) == (
        "Nothing was imported. No upstream named 'shiping' in tenant acme or the platform; known MCP "
        "upstreams: shipping. Name one of them, or add the server first (manage.py add_upstream "
        "--kind mcp, or Upstreams → Add in the admin)."
    )
    assert "retry" not in str(refused.value).lower() and "the user" not in str(refused.value)


def test_import_mcp_for_a_tenant_without_mcp_upstreams_says_none(db):
    TenantFactory(slug="bare")

    with pytest.raises(CommandError, match="known MCP upstreams: none. "):
        call_command("import_mcp", "--tenant", "bare", "--upstream", "shipping", stdout=io.StringIO())


def test_sync_upstreams_that_reached_no_server_fails_and_says_so(agent, shipping):
    # Given tools imported from acme's server, which then stops answering
    import_mcp("--publish")
    upstream_gone("shipping")
    out = io.StringIO()

    # When the drift check runs
    with pytest.raises(CommandError) as failed:
        call_command("sync_upstreams", stdout=out, stderr=io.StringIO())

    # Then it reports the server, fails (exit 1 from the command line), and records nothing
    assert "acme/shipping: not reached, nothing compared" in out.getvalue()
    assert str(failed.value) == (
        "1 of 1 MCP server(s) could not be reached, so nothing was compared for acme/shipping. Check "
        "that they run and that the egress policy (TOOLHUB_EGRESS_ALLOW) allows them, then run "
        "sync_upstreams again."
    )
    assert not DriftFinding.objects.exists()


def test_commands_print_their_report_without_the_libraries_log_lines(transactional_db, agent, shipping):
    # Given acme's tools imported from a server that answers
    import_mcp("--publish")

    # When the drift check runs from the command line (it talks HTTP to the server)
    checked = _manage_in_another_process("sync_upstreams", "--tenant", "acme")

    # Then stdout is its report and stderr holds no log line of httpx, httpcore or the MCP client
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == "acme/shipping: no new drift (6 tools listed, 6 published pinned)."
    assert checked.stderr == ""
