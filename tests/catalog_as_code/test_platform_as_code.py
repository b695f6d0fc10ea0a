"""The platform's part as code: `catalog_export --platform` and `catalog_apply` of it, so a whole
installation (the shared catalog, the platform's upstreams, tenants, agents and their grants
of shared tools) is rebuilt from files, the platform's first, then each tenant's."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import yaml
from django.core.management import CommandError, call_command

from apps.audit.models import AuditEvent
from apps.catalog.models import DriftFinding, Tool, Toolset, ToolVersion
from apps.demo_shop.models import DemoRefund
from apps.demo_shop.seed import demo_seed
from apps.ledger.models import LedgerEntry
from apps.tenancy.models import Agent, AgentKey, Grant, Tenant, TenantPolicy
from apps.tenancy.services import agent_key_issue
from apps.upstreams.models import Credential, SubjectCredential, Upstream
from tests.factories import UpstreamFactory

SECRET = "sk-live-platform-orders-0001"


def export(capsys, *args: str) -> str:
    capsys.readouterr()
    call_command("catalog_export", *args)
    return capsys.readouterr().out


def apply(capsys, tmp_path, name: str, text: str, *args: str) -> tuple[str, str]:
    path = tmp_path / name
    path.write_text(text)
    capsys.readouterr()
    call_command("catalog_apply", str(path), *args)
    captured = capsys.readouterr()
    return captured.out, captured.err


def _rows(rows: Any) -> list[tuple[Any, ...]]:
    return sorted(rows, key=repr)


def installation() -> dict[str, Any]:
    """What the files must bring back: tools and versions, grants, tenants and agents, upstreams."""
    return {
        "tools": _rows(ToolVersion.objects.values_list("tool__tenant__slug", "tool__name", "number",
                                                       "status")),
        "grants": _rows(Grant.objects.values_list("tenant__slug", "tool__name", "agent__name",
                                                  "pinned_version__number")),
        "toolsets": _rows(Toolset.objects.values_list("tenant__slug", "name")),
        "agents": _rows(Agent.objects.values_list("tenant__slug", "name", "active")),
        "upstreams": _rows(Upstream.objects.values_list(
            "tenant__slug", "name", "kind", "base_url", "status_tool", "credential__name",
            "credential__kind")),
    }


def wipe_installation() -> None:
    """A fresh database, but for the demo shop's own orders (the outside system)."""
    for model in (DriftFinding, TenantPolicy, Grant, Toolset, ToolVersion, AgentKey, SubjectCredential,
                  AuditEvent, LedgerEntry):
        model.objects.all().delete()
    Tool.objects.filter(tenant__isnull=False).delete()
    Tool.objects.all().delete()
    Upstream.objects.all().delete()
    Credential.objects.all().delete()
    Agent.objects.all().delete()
    Tenant.objects.all().delete()


@pytest.fixture
def demo_installation(transactional_db, live_server, settings) -> dict[str, Any]:
    """The seeded demo with its payments upstream on the live server, and a platform upstream
    with a secret of its own."""
    settings.TOOLHUB_DEMO_PAYMENTS_URL = f"{live_server.url}/demo/payments"
    demo_seed()
    UpstreamFactory(orders=True, platform=True, base_url="https://orders.example/v1",
                    credential__kind="header", credential__field="X-Api-Key", credential__value=SECRET)
    return installation()


def test_an_installation_is_rebuilt_from_the_platform_file_and_a_tenants(demo_installation, capsys, tmp_path,
                                                                         live_server):
    # given: both files, exported from the seeded installation
    platform = export(capsys, "--platform")
    demo = export(capsys, "--tenant", "demo")
    assert SECRET not in platform
    document = yaml.safe_load(platform)
    assert "refund_payment" in document["tools"]
    assert document["upstreams"]["orders-api"]["credential"] == {"name": "orders-key", "kind": "header",
                                                                 "field": "X-Api-Key"}

    # when: into a fresh database, the platform's file first, then the tenant's
    wipe_installation()
    platform_out, platform_err = apply(capsys, tmp_path, "platform.yaml", platform)
    demo_out, demo_err = apply(capsys, tmp_path, "demo.yaml", demo)

    # then: the same tools, versions, grants, agents and upstreams; the secret is to be set
    assert "Applied" in platform_out and "Applied" in demo_out
    assert installation() == demo_installation
    assert "Credential orders-key of the platform has no value" in platform_err
    assert "Credential demo-shipping-key of demo has no value" in demo_err
    assert Credential.objects.get(name="orders-key").ciphertext == ""
    assert export(capsys, "--platform") == platform
    assert export(capsys, "--tenant", "demo") == demo

    # then: a new key of the agent calls the shared refund_payment, granted by the platform's file
    key = agent_key_issue(agent=Agent.objects.get(tenant__slug="demo", name="support-bot")).secret
    agent_headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=live_server.url, headers=agent_headers, timeout=30) as http:
        session = http.post("/api/v1/sessions", json={"subject": "u-1001"}).json()["token"]
        body = http.post("/api/v1/invoke", headers={"X-ToolHub-Session": session}, json={
            "task_id": "t-1", "call": {"id": "c1", "name": "refund_payment",
                                       "arguments": {"order_id": "ORD-000008", "amount_cents": 100}},
        }).json()
    assert body["status"] == "ok", body
    assert DemoRefund.objects.filter(order_id="ORD-000008", amount_cents=100).exists()


def test_a_second_apply_of_the_platform_file_changes_nothing(demo_installation, capsys, tmp_path):
    # given
    platform = export(capsys, "--platform")

    # when
    out, _ = apply(capsys, tmp_path, "platform.yaml", platform)

    # then
    assert out.startswith("No changes: the catalog of the platform already matches")


def test_a_platform_file_holds_no_secret_and_names_no_tenant(demo_installation, capsys, tmp_path):
    # given
    document = yaml.safe_load(export(capsys, "--platform"))
    document["upstreams"]["orders-api"]["credential"]["value"] = "sk-in-git"
    text = yaml.safe_dump(document)

    # when / then
    with pytest.raises(CommandError, match="a document never holds a secret"):
        apply(capsys, tmp_path, "platform.yaml", text)
    with pytest.raises(CommandError, match="drop --tenant"):
        apply(capsys, tmp_path, "platform.yaml", export(capsys, "--platform"), "--tenant", "demo")
    assert not Credential.objects.filter(name="orders-key", ciphertext="").exists()


def test_a_tenants_file_holds_no_grant_of_a_shared_tool_and_cannot_make_one(demo_installation, capsys,
                                                                            tmp_path):
    # given: the demo's file, and the same file granting itself the shared refund_payment
    exported = export(capsys, "--tenant", "demo")
    document = yaml.safe_load(exported)
    assert "refund_payment" not in {grant["tool"] for grant in document["grants"]}
    document["grants"].append({"tool": "refund_payment", "agent": None, "pinned_version": None})
    grants_before = installation()["grants"]

    # when / then: refused, and the platform's grant of it stays
    with pytest.raises(CommandError, match="refund_payment is a shared tool: only the platform grants it"):
        apply(capsys, tmp_path, "demo.yaml", yaml.safe_dump(document))
    apply(capsys, tmp_path, "demo.yaml", exported)
    assert installation()["grants"] == grants_before
