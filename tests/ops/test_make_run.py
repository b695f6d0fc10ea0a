"""`make run` as a newcomer meets it, and commands in a second shell beside it as the README
has a user run them.

scripts/run.sh on a scratch var dir: the script itself, not `make run` (make would pip-install
into .venv first, and the test's environment has everything installed already). It shows its
banner once everything answers and logs plain lines. The second shell sees the configuration
the server sees (var/run.env), and what it changes agents see at once.

One demo serves every test of this module (starting one takes half a minute); no test depends
on another's changes to it. Stopping it, by Ctrl-C or kill, is under test in
test_make_run_stop.py.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest
import yaml

from tests.ops.conftest import wait_until
from tests.ops.make_run import RunningDemo, kill_make_run, start_make_run
from tests.repair_client import apply_repair

pytestmark = pytest.mark.slow

# time, level, logger: message (apps/common/logs.PlainFormatter), one record per line.
PLAIN_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (DEBUG|INFO|WARNING|ERROR|CRITICAL) +[\w.]+: \S")
# What beat, the worker and gunicorn say while nothing happens, and the script's own probes.
IDLE_CHATTER = ("Sending due task", "] received", "] succeeded in", "Booting worker", "/readyz", "ready.")
# Beat sends its most frequent job every 10 s (toolhub/celery.py).
BEAT_PERIOD_S = 10
REFUSED_LISTING = "INFO    toolhub.access: GET /api/v1/tools 401"

NEW_DESCRIPTION = (
    "Where one shipment is now, by its id (e.g. SHP-000042): status, carrier, last scan and "
    "estimated delivery. Changes nothing. Do not use it to book a pickup (use schedule_pickup)."
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDemo]:
    running = start_make_run(tmp_path_factory.mktemp("make-run"))
    yield running
    kill_make_run(running)


def test_make_run_shows_its_banner_once_everything_answers(demo):
    # Given make run, started by a newcomer on an empty var dir
    printed = demo.out.read_text()

    # Then the banner came once the server, the demo MCP server and the MCP bridge answered,
    # last, naming their URLs, without Celery's own banners; the database is SQLite in the var dir
    assert demo.answered_at_banner == {"readyz": 200, "demo MCP healthz": 200, "MCP bridge healthz": 200}
    assert printed.index("Starting the web server") < printed.index("ToolHub is running")
    assert f"Admin         http://127.0.0.1:{demo.port}/admin/" in printed
    assert f"Demo MCP      http://127.0.0.1:{demo.mcp_port}/mcp" in printed
    assert f"MCP bridge    http://127.0.0.1:{demo.bridge_port}   (stdio MCP servers" in printed
    assert "[tasks]" not in printed and "LocalTime ->" not in printed
    assert demo.var_dir.joinpath("toolhub.sqlite3").exists()


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
    # the demo's own list_order_refunds has the name: the copy's ends in a digest of its key
    assert re.search(r"listOrderRefunds: new; [^\n]* → list_order_refunds_b42503 v1 \(draft\)",
                     imported.stdout), imported.stdout
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


def test_make_run_logs_one_plain_line_per_record_and_no_idle_chatter(demo):
    # Given make run, up for at least a round of beat's jobs (the tests above count), and an
    # agent without a key refused
    refused = httpx.get(f"{demo.url}/api/v1/tools", timeout=5)
    time.sleep(max(0.0, demo.up_since + BEAT_PERIOD_S + 2 - time.monotonic()))

    # When its logs are read
    wait_until(lambda: REFUSED_LISTING in demo.err.read_text(), timeout_s=10,
               what="the refused request's log line")
    logs = demo.err.read_text()

    # Then each record is one plain line, the refused request among them, and beat's jobs,
    # the worker's tasks and the probes say nothing
    assert refused.status_code == 401
    lines = logs.splitlines()
    assert [line for line in lines if not PLAIN_LINE.match(line)] == []
    assert [line for line in lines if any(chatter in line for chatter in IDLE_CHATTER)] == []


def test_on_sqlite_a_tool_is_opened_on_request_a_refused_call_is_repaired_and_code_runs(demo):
    # Given make run's SQLite database and filesystem broker, and an end user's session
    with _agent(demo) as agent:
        token = agent.post("/api/v1/sessions", json={"subject": "u-1001"}).json()["token"]

        def invoke(call_id: str, name: str, arguments: dict, phase: str = "lookup") -> dict:
            body = {"task_id": "t-sqlite", "toolset": "support", "phase": phase,
                    "call": {"id": call_id, "name": name, "arguments": arguments}}
            return agent.post("/api/v1/invoke", headers={"X-ToolHub-Session": token}, json=body).json()

        # When the model asks for a tool phase lookup prunes, with the simple match SQLite has
        # (refund_payment: another test of this module takes cancel_order's grant away)
        asked = invoke("c1", "request_capability", {
            "capability": "refund a payment", "reason": "The user wants their money back.",
            "example_arguments": None,
        })
        # and repairs a refused search from the details alone
        arguments = {"status": "not cancelled", "start_date": "2026-01-01", "end_date": "2026-01-31",
                     "limit": 500}
        refused = invoke("c2", "search_orders", arguments)
        repaired = invoke("c3", "search_orders", apply_repair(arguments, refused))
        # and runs code in the sandbox, on make run's worker
        code = 'result = len(tools.search_orders(status="paid", start_date="2026-01-01", ' \
               'end_date="2026-01-31", limit=100))'
        ran = invoke("c4", "run_python", {"code": code}, phase="resolve")

    # Then the match is opened to the task, the repaired call passes, and the run answers
    opened = asked["data"]["matches"][0]
    assert (opened["name"], opened["callable"], opened.get("opened")) == ("refund_payment", True, True), asked
    assert refused["kind"] == "invalid_args" and repaired["status"] in ("ok", "empty"), repaired
    assert ran["status"] == "ok" and ran["data"]["calls"] == 1 and ran["data"]["result"] > 0, ran
