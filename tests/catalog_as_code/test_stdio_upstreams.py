"""A tenant's stdio MCP server in its catalog file: named by its launcher and arguments, and
applied only where the platform has registered that launcher."""

from __future__ import annotations

import io

import pytest
import yaml
from django.core.management import CommandError, call_command

from apps.upstreams.models import McpLauncher, Upstream
from tests.factories import McpLauncherFactory, TenantFactory, UpstreamFactory

pytestmark = pytest.mark.django_db


def _export(slug: str) -> dict:
    out = io.StringIO()
    call_command("catalog_export", "--tenant", slug, stdout=out, stderr=io.StringIO())
    return yaml.safe_load(out.getvalue())


def _apply(tmp_path, document: dict) -> str:
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(document))
    out = io.StringIO()
    call_command("catalog_apply", str(path), stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_a_stdio_server_goes_into_the_file_by_launcher_and_comes_back_from_it(tmp_path):
    acme = TenantFactory(slug="acme")
    git = McpLauncherFactory(name="git", command=["/opt/mcp/bin/mcp-server-git"], allow_args=True)
    UpstreamFactory(tenant=acme, name="docs-repo", kind="mcp", base_url="", launcher=git,
                    launcher_args=["--repository", "/srv/repos/docs"])
    document = _export("acme")
    Upstream.objects.all().delete()

    applied = _apply(tmp_path, document)

    assert "+ upstream docs-repo" in applied
    entry = document["upstreams"]["docs-repo"]
    assert (entry["base_url"], entry["launcher"], entry["launcher_args"]) == (
        "", "git", ["--repository", "/srv/repos/docs"]
    )
    upstream = Upstream.objects.get()
    assert (upstream.launcher, upstream.launcher_args) == (git, ["--repository", "/srv/repos/docs"])
    assert "upstream docs-repo" not in _apply(tmp_path, _export("acme"))


def test_a_launcher_the_installation_lacks_is_named_and_nothing_is_applied(tmp_path):
    acme = TenantFactory(slug="acme")
    UpstreamFactory(tenant=acme, name="docs-repo", kind="mcp", base_url="",
                    launcher=McpLauncherFactory(name="git", command=["/opt/mcp/bin/mcp-server-git"]))
    document = _export("acme")
    Upstream.objects.all().delete()
    McpLauncher.objects.all().delete()

    with pytest.raises(CommandError) as refused:
        _apply(tmp_path, document)

    assert "upstreams.docs-repo" in str(refused.value)
    assert "No launcher 'git' on this installation" in str(refused.value)
    assert not Upstream.objects.exists()
