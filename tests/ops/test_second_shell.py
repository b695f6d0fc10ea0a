"""Commands in a second shell beside `make run`, as the README has a user run them: they see
the configuration the server sees (var/run.env), and what they change agents see at once."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import yaml

from tests.ops.make_run import RunningDemo, start_make_run, stop_make_run

pytestmark = pytest.mark.slow

NEW_DESCRIPTION = (
    "Where one shipment is now, by its id (e.g. SHP-000042): status, carrier, last scan and "
    "estimated delivery. Changes nothing. Do not use it to book a pickup (use schedule_pickup)."
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDemo]:
    running = start_make_run(tmp_path_factory.mktemp("make-run"))
    yield running
    stop_make_run(running)


def _agent(demo: RunningDemo, key: str | None = None) -> httpx.Client:
    return httpx.Client(
        base_url=demo.url, headers={"Authorization": f"Bearer {key or demo.agent_key}"}, timeout=30
    )


def _described(demo: RunningDemo, tool: str) -> tuple[int | None, str]:
    with _agent(demo) as agent:
        listed = agent.get("/api/v1/tools", params={"format": "toolhub"}).json()["tools"]
    found = next(t for t in listed if t["name"] == tool)
    return found.get("version"), found["description"]


def test_lint_import_and_drift_check_from_a_second_shell_reach_the_demos_loopback_servers(demo):
    # Given make run, and a new terminal that exported nothing
    # When the README's lint, an import of the demo provider's own document and the drift
    # check run there
    linted = demo.manage("lint_tools")
    imported = demo.manage(
        "import_openapi", f"{demo.url}/demo/openapi.json", "--tenant", "demo", "--upstream", "payments-copy",
        "--operations", "listOrderRefunds",
    )
    synced = demo.manage("sync_upstreams", "--tenant", "demo")

    # Then the demo's upstreams are allowed as they are for the server: no egress ERROR on
    # the seeded refund_payment, and the shipping server is reached and compared
    assert linted.returncode == 0, linted.stdout[-3000:] + linted.stderr[-2000:]
    assert "egress" not in linted.stdout.lower()
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "listOrderRefunds: new → list_order_refunds_2 v1 (draft)" in imported.stdout
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "demo/demo-shipping: no new drift" in synced.stdout
    assert "not reached" not in synced.stdout
    # and each printed its report, without the libraries' log lines (HTTP requests)
    assert "HTTP Request" not in linted.stderr + imported.stderr + synced.stderr


def test_a_version_published_by_import_mcp_in_a_second_shell_is_what_agents_see_next(demo):
    # Given an agent that listed its tools (the server caches the export), and the shipping
    # server now describing track_shipment differently
    version_before, description_before = _described(demo, "track_shipment")
    drift = httpx.post(
        f"http://127.0.0.1:{demo.mcp_port}/drift", timeout=10,
        headers={"Authorization": "Bearer demo-shipping-secret"},
        json={"tool": "track_shipment", "description": NEW_DESCRIPTION},
    )
    assert drift.status_code == 200, drift.text

    # When a second shell imports and publishes the change
    imported = demo.manage(
        "import_mcp", "--tenant", "demo", "--upstream", "demo-shipping", "--tools", "track_shipment",
        "--publish", "--grant", "support-bot",
    )

    # Then the agent's very next listing has the new version, and a call runs it
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "track_shipment: changed: description" in imported.stdout
    assert _described(demo, "track_shipment") == (version_before + 1, NEW_DESCRIPTION)
    assert description_before != NEW_DESCRIPTION
    with _agent(demo) as agent:
        token = agent.post("/api/v1/sessions", json={"subject": "u-1001"}).json()["token"]
        called = agent.post(
            "/api/v1/invoke", headers={"X-ToolHub-Session": token},
            json={"task_id": "t-second-shell", "call": {
                "id": "call_1", "name": "track_shipment", "arguments": {"shipment_id": "SHP-000042"}}},
        ).json()
    assert (called["status"], called["version"]) == ("ok", version_before + 1), called


def test_a_key_revoked_in_a_second_shell_is_refused_on_the_next_request(demo):
    # Given a key issued in a second shell and used once (the server caches its lookup)
    issued = demo.manage("issue_agent_key", "--tenant", "demo", "--agent", "support-bot")
    assert issued.returncode == 0, issued.stderr
    key = next(line.split("=", 1)[1] for line in issued.stdout.splitlines() if line.startswith("AGENT_KEY="))
    with _agent(demo, key) as agent:
        assert agent.get("/api/v1/tools").status_code == 200

    # When the second shell revokes it
    revoked = demo.manage("revoke_agent_key", "--prefix", key)

    # Then the next request with it is refused
    assert revoked.returncode == 0, revoked.stderr
    with _agent(demo, key) as agent:
        assert agent.get("/api/v1/tools").status_code == 401


def test_a_grant_removed_by_catalog_apply_in_a_second_shell_is_gone_from_the_next_listing(demo, tmp_path):
    # Given the agent listing cancel_order (the server caches the listing), and the demo's
    # catalog exported in a second shell
    assert "cancel_order" in _listed(demo)
    catalog = tmp_path / "catalog" / "demo.yaml"
    exported = demo.manage("catalog_export", "--tenant", "demo", "--out", str(catalog))
    assert exported.returncode == 0, exported.stderr
    document = yaml.safe_load(catalog.read_text())
    document["grants"] = [g for g in document["grants"] if g["tool"] != "cancel_order"]
    catalog.write_text(yaml.safe_dump(document, sort_keys=False))

    # When the file without that grant is applied there
    applied = demo.manage("catalog_apply", str(catalog))

    # Then the agent's very next listing no longer offers it
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "cancel_order" not in _listed(demo)


def _listed(demo: RunningDemo) -> set[str]:
    with _agent(demo) as agent:
        return {t["name"] for t in agent.get("/api/v1/tools", params={"format": "toolhub"}).json()["tools"]}
