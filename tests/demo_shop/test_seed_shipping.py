"""`seed_demo` and the demo shipping MCP server: its upstream, and its tools imported,
reviewed and published without the server running, pinned to exactly what the server
lists, so a running server is governed from the first call and shows no drift."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from apps.catalog.models import Toolset, ToolVersion
from apps.catalog.selectors import version_findings
from apps.demo_shop.shipping.server import reviewed_tool_definitions
from apps.gateway.outbound import list_mcp_tools
from apps.imports.mcp_tools import definition_digest
from apps.upstreams.selectors import upstream_for_call
from tests.shipping_upstream import KEY, shipping_server

pytestmark = pytest.mark.django_db

SHIPPING_TOOLS = {"track_shipment", "schedule_pickup", "pickup_status"}


def _seed() -> None:
    call_command("seed_demo", stdout=io.StringIO())


def test_seed_demo_registers_the_mcp_upstream_and_publishes_its_reviewed_tools_while_it_is_down(settings):
    settings.TOOLHUB_DEMO_SHIPPING_MCP_URL = "http://127.0.0.1:9/mcp"  # nothing listens there
    _seed()

    upstream = upstream_for_call(tenant_id=_demo_tenant_id(), name="demo-shipping", subject="")
    assert (upstream.kind, upstream.base_url) == ("mcp", "http://127.0.0.1:9/mcp")
    assert upstream.auth_headers == {"Authorization": "Bearer demo-shipping-secret"}
    versions = {v.tool.name: v for v in ToolVersion.objects.filter(executor="mcp")}
    assert set(versions) == SHIPPING_TOOLS
    assert {v.status for v in versions.values()} == {"published"}
    assert {n: v.side_effect for n, v in versions.items()} == {
        "track_shipment": "readonly", "pickup_status": "readonly", "schedule_pickup": "write"}
    support = Toolset.objects.get(tenant__slug="demo", name="support")
    assert SHIPPING_TOOLS <= {t.name for t in support.tools.all()}
    definitions = {d["name"]: d for d in reviewed_tool_definitions()}
    for name, version in versions.items():
        pinned = {k: version.source[k] for k in ("kind", "upstream", "key", "digest", "tool")}
        assert pinned == {"kind": "mcp", "upstream": "demo-shipping", "key": name,
                          "digest": definition_digest(definitions[name]), "tool": definitions[name]}
        assert version.executor_config["tool"] == name
        assert [f.code for f in version_findings(version=version) if f.is_error] == []
        assert "do not use" in version.description.lower()
    assert versions["track_shipment"].normalizers == {"shipment_id": ["trim", "upper"]}
    # ToolHub fills the write's idempotency key: the model never sees it
    write = versions["schedule_pickup"]
    assert write.executor_config["idempotency_argument"] == "idempotency_key"
    assert "idempotency_key" not in write.parameters["properties"]
    assert "idempotency_key" not in write.parameters["required"]


def test_a_rerun_imports_nothing_more():
    _seed()
    before = list(ToolVersion.objects.order_by("pk").values())

    _seed()

    assert list(ToolVersion.objects.order_by("pk").values()) == before


def test_the_running_server_lists_exactly_the_definitions_the_versions_are_pinned_to(settings, tmp_path):
    with shipping_server(tmp_path / "state.json", key="demo-shipping-secret") as server:
        settings.TOOLHUB_DEMO_SHIPPING_MCP_URL = server.url
        _seed()
        upstream = upstream_for_call(tenant_id=_demo_tenant_id(), name="demo-shipping", subject="")
        listed = list_mcp_tools(upstream, tenant_id=_demo_tenant_id())

    pinned = {v.source["key"]: v.source["digest"] for v in ToolVersion.objects.filter(executor="mcp")}
    assert {d["name"]: definition_digest(d) for d in listed} == pinned
    assert KEY != "demo-shipping-secret"  # the seeded credential is the settings' key, not the tests'


def _demo_tenant_id() -> int:
    from apps.tenancy.models import Tenant

    return Tenant.objects.get(slug="demo").pk
