"""What the README's walk-throughs tell a newcomer to type is true of the seeded demo: the
tenants and tools they name exist, the catalog excerpt is what `catalog_export` writes, an
error it quotes points where the export puts it, the drift walk-through's commands leave the
finding it quotes, and local commands run the venv's Python."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from apps.demo_shop.shipping.server import DESCRIPTIONS, DRIFTED_TOOL
from apps.tenancy.models import Grant, Tenant

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
# The README's placeholders for "your tenant", not names of the demo.
PLACEHOLDERS = {"SLUG"}


@pytest.fixture
def demo() -> None:
    call_command("seed_demo", stdout=io.StringIO())


def _export(tmp_path: Path) -> dict:
    out = tmp_path / "demo.yaml"
    call_command("catalog_export", "--tenant", "demo", "--out", str(out), stdout=io.StringIO())
    return yaml.safe_load(out.read_text())


def test_every_tenant_a_readme_command_names_is_one_the_demo_has(demo):
    named = set(re.findall(r"--tenant ([\w-]+)", README)) - PLACEHOLDERS

    assert named, "the README names no tenant in its commands any more: drop this test"
    assert named <= set(Tenant.objects.values_list("slug", flat=True))


def test_every_tool_the_walkthroughs_call_is_granted_to_the_demo_agent(demo):
    invoked = set(re.findall(r"invoke call_\d+ (\w+)", README))
    invoked |= set(re.findall(r'"method": "tools/call", "params": \{"name": "(\w+)"', README))

    granted = set(Grant.objects.filter(tenant__slug="demo", agent__name="support-bot")
                  .values_list("tool__name", flat=True))
    # The stdio walk's tool is granted by the walk's own import_mcp step (the server is not
    # part of the demo); tests/e2e/test_stdio_server.py takes that walk.
    walk_granted = {"get_current_time"}
    assert "--upstream clock --publish --grant support-bot" in README
    assert {"search_orders", "refund_payment", "track_shipment", "schedule_pickup"} <= invoked
    assert invoked - walk_granted <= granted


def test_the_catalog_excerpt_is_what_catalog_export_writes_for_the_demo(demo, tmp_path):
    excerpt = yaml.safe_load(re.search(r"```yaml\n(format: 1\n.*?)```", README, re.S)[1])

    exported = _export(tmp_path)

    assert (excerpt["format"], excerpt["tenant"]) == (exported["format"], exported["tenant"])
    for name, tool in excerpt["tools"].items():
        (quoted,) = tool["versions"]
        actual = exported["tools"][name]["versions"][0]
        description = quoted.pop("description")  # cut short with "…"
        assert actual["description"].startswith(description.rstrip("…"))
        assert {key: actual[key] for key in quoted} == quoted
        assert tool["summary"] == exported["tools"][name]["summary"]
    for name, toolset in excerpt["toolsets"].items():
        assert set(toolset["tools"]) <= set(exported["toolsets"][name]["tools"])
        for phase, tools in toolset["phases"].items():
            assert tools is None or tools == exported["toolsets"][name]["phases"][phase]
    assert all(grant in exported["grants"] for grant in excerpt["grants"])
    assert excerpt["policies"] == exported["policies"]


def test_a_refused_apply_quoted_by_the_readme_points_at_a_version_the_export_has(demo, tmp_path):
    quoted = re.findall(r"`tools\.(\w+)\.versions\[(\d+)\]\.", README)

    exported = _export(tmp_path)

    assert quoted
    for tool, index in quoted:
        assert int(index) < len(exported["tools"][tool]["versions"])


def test_local_commands_of_the_docs_run_the_venvs_python():
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            *sorted((ROOT / "docs").glob("examples/*.py"))]
    bare = re.compile(r"(?<![\w/.])python3? (docs/|-m apps\.|-m bench\.)")

    found = [f"{path.name}: {match[0]}" for path in docs for match in bare.finditer(path.read_text())]

    assert found == []


def test_one_liners_on_the_systems_python_import_only_the_standard_library():
    # Only the venv has ToolHub's dependencies (cryptography, httpx…); `make run` needs
    # nothing but Python 3.11+ on the machine.
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    one_liner = re.compile(r"(?<![\w/.])python3? -c '([^']*)'")
    imported = re.compile(r"(?:^|;)\s*(?:from|import)\s+([\w.]+(?:\s*,\s*[\w.]+)*)")

    outside = [f"{path.name}: {module}" for path in docs
               for code in one_liner.findall(path.read_text())
               for names in imported.findall(code)
               for module in (name.strip().split(".")[0] for name in names.split(","))
               if module not in sys.stdlib_module_names]

    assert outside == []


def test_the_drift_walkthrough_still_drifts_when_sync_upstreams_checks():
    # A reader runs each block whole: a block that also sends DELETE /drift puts the
    # originals back before the check, and sync_upstreams then finds nothing.
    blocks = re.findall(r"```(?:sh|bash)\n(.*?)```", README, re.S)
    drifting = [block for block in blocks if "/drift" in block]
    quoted = set(re.findall(r"^demo/demo-shipping: demo: (\w+): description changed", README, re.M))

    assert drifting, "the README no longer makes the demo server drift: drop this test"
    assert all("-X DELETE" not in block and " -d " not in block for block in drifting)
    assert quoted == {DRIFTED_TOOL}


def test_make_runs_banner_names_every_tool_of_the_demo_mcp_server():
    # The README's walk-through calls all three; the banner is where a newcomer reads them.
    banner = (ROOT / "scripts" / "run.sh").read_text()
    listed = re.search(r"\(shipping: ([\w,\s]+);", banner)[1]

    assert sorted(name.strip() for name in listed.split(",")) == sorted(DESCRIPTIONS)
