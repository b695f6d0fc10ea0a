"""Screenshots of the admin for the README: the version page, the dashboard, the triage queue.

    DATABASE_URL=postgres://…/scratch .venv/bin/python scripts/screenshots.py

Migrates and seeds the given (scratch!) database with the demo and a day of operations,
serves it with Django's runserver and the demo shipping MCP server (its state in a temporary
file) on free loopback ports, and has headless Chromium (Debian's, /usr/bin/chromium) save
docs/admin-mcp-import.png (the server's tools as it lists them), then makes the server change
a description and runs sync_upstreams, as README "Govern an MCP server" step 6 does, and saves
docs/admin-version.png, docs/admin-version-unsaved.png, docs/admin-dashboard.png (with the
open drift finding), docs/admin-triage.png, docs/admin-triage-entry.png,
docs/admin-invocations.png, docs/admin-approval.png, docs/admin-payments-faults.png (an empty
list explaining itself), docs/admin-openapi-import.png, docs/admin-credential.png,
docs/admin-drift-findings.png and docs/admin-drift-finding.png, and the stdio servers' pages
README "Servers that speak stdio" shows: docs/admin-mcp-launcher.png (a launcher, as only a
superuser sees it) and docs/admin-stdio-upstream.png (a tenant's upstream naming it), and
docs/admin-capability-request.png (a request_capability call that opened cancel_order to its
task, made over the API). The servers are stopped at the end, also on error.
"""

from __future__ import annotations

import io
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings.base")
# The seed publishes refund_payment, which reaches the demo upstream on loopback (as make run does),
# and the drift check lists the demo MCP server's tools on loopback.
os.environ.setdefault("TOOLHUB_EGRESS_ALLOW", "127.0.0.1:*")
# sync_upstreams' MCP client logs each request at INFO; the script's output is its own lines
os.environ.setdefault("LOG_LEVEL", "WARNING")
# The seed points the upstream demo-shipping at this port, where main() starts the demo MCP
# server; set before the settings are read, overriding .env, so nothing else is reached.
MCP_PORT = free_port()
os.environ["TOOLHUB_DEMO_MCP_PORT"] = str(MCP_PORT)
os.environ["TOOLHUB_DEMO_SHIPPING_MCP_URL"] = f"http://127.0.0.1:{MCP_PORT}/mcp"

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.utils import timezone  # noqa: E402

from apps.audit.models import Invocation  # noqa: E402
from apps.capabilities.models import CapabilityRequest  # noqa: E402
from apps.catalog.models import DriftFinding, ToolVersion, VersionStatus  # noqa: E402
from apps.catalog.services import version_create_draft_from, version_save_draft  # noqa: E402
from apps.demo_shop.models import PaymentsFault  # noqa: E402
from apps.demo_shop.seed import demo_agent_key  # noqa: E402
from apps.ledger.models import Approval, LedgerEntry, LedgerState, ReconcileAttempt  # noqa: E402
from apps.tenancy.models import Agent, Tenant  # noqa: E402
from apps.upstreams.models import McpLauncher, Upstream  # noqa: E402
from apps.upstreams.services import launcher_save, upstream_save  # noqa: E402

USER, PASSWORD = "screenshots", "screenshots-only-pw"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def seed() -> ToolVersion:
    """The demo, a day of calls, a triage backlog, a pending approval and a draft to review."""
    call_command("migrate", verbosity=0)
    call_command("seed_demo", stdout=open(os.devnull, "w"))
    User.objects.filter(username=USER).delete()
    User.objects.create_superuser(username=USER, password=PASSWORD)
    tenant, agent = Tenant.objects.get(slug="demo"), Agent.objects.get(name="support-bot")
    versions = {v.tool.name: v for v in ToolVersion.objects.filter(status="published").select_related("tool")}
    rng = random.Random(7)
    now = timezone.now()
    Invocation.objects.filter(tenant=tenant).delete()
    outcomes = [*[("ok", "")] * 14, *[("empty", "")] * 3, *[("error", "invalid_args")] * 3,
                ("error", "business_rule"), ("error", "timeout"), ("error", "unknown_tool")]
    rows = []
    for i in range(1500):
        tool = rng.choice(list(versions))
        status, kind = rng.choice(outcomes)
        rows.append(Invocation(tenant=tenant, agent=agent, task_id=f"demo-{i // 4}", call_id=f"call_{i % 4}",
                               tool_name=tool, version_number=1, status=status, kind=kind,
                               latency_ms=rng.lognormvariate(3.2 if tool != "refund_payment" else 5, 0.6),
                               envelope={"status": status, "kind": kind} if kind else {"status": status}))
    created = Invocation.objects.bulk_create(rows)
    for row in created:
        Invocation.objects.filter(pk=row.pk).update(created_at=now - timedelta(minutes=rng.uniform(0, 1440)))

    refund = versions["refund_payment"]
    LedgerEntry.objects.filter(tenant=tenant, task_id__startswith="shot-").delete()
    for n, (hours, note) in enumerate([(30, "status endpoint answered 503"), (5, "status endpoint timed out"),
                                       (1.5, "no answer from the provider")]):
        entry = LedgerEntry.objects.create(
            tenant=tenant, agent=agent, key=f"demo/shot-{n}/call_1/refund_payment/h{n}", task_id=f"shot-{n}",
            call_id="call_1", tool=refund.tool, version=refund, subject="u-1001", args_hash=f"h{n}",
            arguments={"order_id": f"ORD-00004{n}", "amount_cents": 1250 * (n + 1), "user_id": "u-1001"},
            state=LedgerState.UNKNOWN, attempts=5, triage_since=now - timedelta(hours=hours),
        )
        LedgerEntry.objects.filter(pk=entry.pk).update(created_at=now - timedelta(hours=hours, minutes=40))
        for _ in range(3):
            ReconcileAttempt.objects.create(entry=entry, answer="unclear", note=note,
                                            actor="reconciler")
    waiting = LedgerEntry.objects.create(
        tenant=tenant, agent=agent, key="demo/shot-approval/call_1/refund_payment/ha",
        task_id="shot-approval",
        call_id="call_1", tool=refund.tool, version=refund, subject="u-2002", args_hash="ha",
        arguments={"order_id": "ORD-000120", "amount_cents": 48000, "user_id": "u-2002"}, run_async=True,
    )
    Approval.objects.create(entry=waiting, tenant=tenant, version=refund, args_hash="ha",
                            reason="amount_cents is 48000, above 45000: an operator must approve it.",
                            expires_at=now + timedelta(minutes=50))
    PaymentsFault.objects.all().delete()
    # the finding the shots show is the one this run's drift makes, not a rerun's leftover
    DriftFinding.objects.filter(tenant=tenant).delete()
    for name, count in [("export_invoice_pdf", 41), ("change_shipping_address", 17), ("track_parcel", 9)]:
        CapabilityRequest.objects.update_or_create(
            tenant=tenant, name=name, defaults={"count": count, "first_seen": now - timedelta(days=3),
                                                "last_seen": now})

    search = versions["search_orders"]
    ToolVersion.objects.filter(tool=search.tool, status=VersionStatus.DRAFT).delete()
    draft = version_create_draft_from(version=search, actor="screenshots")
    draft.parameters["properties"]["sort"] = {"type": "string", "description": "How to order the results."}
    draft.parameters["required"].append("sort")
    draft.changelog = "Let the model choose the order of results."
    return version_save_draft(version=draft, actor="screenshots")


def _await_port(what: str, process: subprocess.Popen[bytes], port: int) -> None:
    for _ in range(100):
        if process.poll() is not None:
            sys.exit(f"The {what} exited (status {process.returncode}) before it answered on port {port}.")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.2)
    sys.exit(f"The {what} did not answer on port {port} within 20 s.")


@contextmanager
def serving(what: str, args: list[str], port: int | None, env: dict[str, str]) -> Iterator[None]:
    """`args` running until the block ends (also on error), once it accepts connections on `port`
    (at once without one: a worker listens to its broker)."""
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if port is not None:
            _await_port(what, process, port)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def admin_page(base: str) -> Iterator[Any]:
    """A Chromium page logged into the admin; no ORM inside (Playwright runs an event loop)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                             args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000}, color_scheme="light")
        page.goto(f"{base}/admin/login/")
        page.fill("#id_username", USER)
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        yield page
        browser.close()


def shoot_mcp_import(base: str, upstream_id: int) -> None:
    """The upstream's Import tools page before any drift: the tools as the server lists them."""
    with admin_page(base) as page:
        page.goto(f"{base}/admin/upstreams/upstream/{upstream_id}/change/")
        page.click("#import-tools")
        # a short page: down to its button, not a viewport of blank space
        button = page.locator("#listed-tools ~ .submit-row").bounding_box()
        page.screenshot(path=str(ROOT / "docs/admin-mcp-import.png"),
                        clip={"x": 0, "y": 0, "width": 1440, "height": button["y"] + button["height"] + 24})


def make_drift() -> None:
    """What a rug pull does, as README step 6: the server rewrites track_shipment's description,
    and the drift check (sync_upstreams, as beat runs it) records it as a finding."""
    key = settings.TOOLHUB_SECRETS["DEMO_SHIPPING_API_KEY"]
    request = urllib.request.Request(f"http://127.0.0.1:{MCP_PORT}/drift", method="POST", data=b"",
                                     headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        drifted = json.load(answer)["tool"]
    report = io.StringIO()
    call_command("sync_upstreams", tenant="demo", upstream="demo-shipping", stdout=report, stderr=report)
    if not DriftFinding.objects.filter(tenant__slug="demo", upstream_tool=drifted, reviewed_at=None).exists():
        sys.exit(f"sync_upstreams recorded no open finding for {drifted}; it said:\n{report.getvalue()}")


def shoot(base: str, draft: ToolVersion) -> None:
    demo_tenant_id = Tenant.objects.get(slug="demo").pk  # no ORM inside Playwright's event loop

    with admin_page(base) as page:
        page.goto(f"{base}/admin/catalog/toolversion/{draft.pk}/change/")
        page.screenshot(path=str(ROOT / "docs/admin-version.png"), full_page=True)
        # the same draft after an edit that failed validation: Publish is off until it is saved
        page.fill("#id_parameters", '{"type": "object", "properties": ')
        page.click("input[name=_continue]")
        page.screenshot(path=str(ROOT / "docs/admin-version-unsaved.png"))
        page.goto(f"{base}/admin/dashboard/")
        page.wait_for_function("() => Object.keys(Chart.instances).length >= 3")
        page.screenshot(path=str(ROOT / "docs/admin-dashboard.png"), full_page=True)
        page.goto(f"{base}/admin/ledger/triageentry/")
        page.screenshot(path=str(ROOT / "docs/admin-triage.png"), full_page=True)
        page.locator("#result_list a", has_text="refund_payment").first.click()
        page.screenshot(path=str(ROOT / "docs/admin-triage-entry.png"), full_page=True)
        page.goto(f"{base}/admin/audit/invocation/")
        page.screenshot(path=str(ROOT / "docs/admin-invocations.png"))
        # the pending approval, titled by its tool, task and call
        page.goto(f"{base}/admin/ledger/pendingapproval/")
        page.locator("#result_list a", has_text="refund_payment").first.click()
        page.screenshot(path=str(ROOT / "docs/admin-approval.png"))
        page.goto(f"{base}/admin/demo_shop/paymentsfault/")
        page.screenshot(path=str(ROOT / "docs/admin-payments-faults.png"))
        # the provider's own OpenAPI document imported again: one result per operation
        page.goto(f"{base}/admin/imports/openapi/")
        page.select_option("#id_tenant", value=str(demo_tenant_id))
        page.fill("#id_url", f"{base}/demo/openapi.json")
        page.fill("#id_upstream", "demo-payments")
        page.click("input[type=submit]")
        # the worker imports it; the run's page reloads itself until the report is there
        page.wait_for_selector("#import-results", timeout=60_000)
        page.screenshot(path=str(ROOT / "docs/admin-openapi-import.png"), full_page=True)
        # write-only: kind, who changed it and when, the last four characters; never the value
        page.goto(f"{base}/admin/upstreams/credential/")
        page.locator("#result_list a", has_text="demo-payments-key").first.click()
        page.screenshot(path=str(ROOT / "docs/admin-credential.png"), full_page=True)
        # the open findings, as the dashboard's panel links to them, and the rug pull's diff
        page.goto(f"{base}/admin/catalog/driftfinding/?review=open")
        page.screenshot(path=str(ROOT / "docs/admin-drift-findings.png"))
        page.locator("#result_list a", has_text="track_shipment").first.click()
        # its diff and what it is about; both definitions in full follow further down
        page.screenshot(path=str(ROOT / "docs/admin-drift-finding.png"))


def seed_stdio() -> tuple[int, int]:
    """README "Servers that speak stdio", steps 1 and 2: a launcher and the demo's upstream
    naming it (kept from an earlier run of this script)."""
    launcher = McpLauncher.objects.filter(name="mcp-server-git").first() or launcher_save(
        launcher=McpLauncher(
            name="mcp-server-git", description="Reads and searches Git repositories (mcp-server-git, PyPI).",
            command=["/opt/mcp/git/bin/mcp-server-git"], read_paths=["/srv/repos"], allow_args=True,
            memory_mb=512,
        ),
        actor="screenshots",
    )
    upstream = Upstream.objects.filter(tenant__slug="demo", name="docs-repo").first() or upstream_save(
        upstream=Upstream(tenant=Tenant.objects.get(slug="demo"), name="docs-repo", kind="mcp", base_url="",
                          launcher=launcher, launcher_args=["--repository", "/srv/repos/docs"]),
        actor="screenshots",
    )
    return launcher.pk, upstream.pk


def shoot_stdio(base: str, launcher_id: int, upstream_id: int) -> None:
    with admin_page(base) as page:
        page.goto(f"{base}/admin/upstreams/mcplauncher/{launcher_id}/change/")
        page.screenshot(path=str(ROOT / "docs/admin-mcp-launcher.png"), full_page=True)
        page.goto(f"{base}/admin/upstreams/upstream/{upstream_id}/change/")
        page.screenshot(path=str(ROOT / "docs/admin-stdio-upstream.png"), full_page=True)


def ask_for_cancel(base: str) -> int:
    """A model in phase lookup asks for what only cancel_order does; the id of the request."""

    def post(path: str, body: dict[str, Any], session: str = "") -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {demo_agent_key()}", "Content-Type": "application/json",
                   **({"X-ToolHub-Session": session} if session else {})}
        request = urllib.request.Request(f"{base}{path}", data=json.dumps(body).encode(), headers=headers)
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())

    token = post("/api/v1/sessions", {"subject": "u-1001"})["token"]
    post("/api/v1/invoke", {
        "task_id": "support-7781", "toolset": "support", "phase": "lookup",
        "call": {"id": "call_2", "name": "request_capability", "arguments": {
            "capability": "cancel an order", "reason": "The user wants to cancel an order they placed.",
            "example_arguments": None}},
    }, token)
    return CapabilityRequest.objects.get(tenant__slug="demo", name="cancel_order", reason="unknown").pk


def shoot_capability(base: str, request_id: int) -> None:
    with admin_page(base) as page:
        page.goto(f"{base}/admin/capabilities/capabilityrequest/{request_id}/change/")
        page.screenshot(path=str(ROOT / "docs/admin-capability-request.png"), full_page=True)


def main() -> None:
    if "DATABASE_URL" not in os.environ:
        sys.exit("Set DATABASE_URL to a scratch database: this script seeds it.")
    draft = seed()
    launcher_id, stdio_id = seed_stdio()
    shipping = Upstream.objects.get(tenant__slug="demo", name="demo-shipping")
    port = free_port()
    env = {**os.environ, "DEBUG": "false",
           "DEMO_SHIPPING_API_KEY": settings.TOOLHUB_SECRETS["DEMO_SHIPPING_API_KEY"]}
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as state_dir:
        # The web server and the worker share a filesystem broker of their own: a `make run`'s
        # worker, reading var/broker, must not take this database's import.
        env["TOOLHUB_VAR_DIR"] = state_dir
        for folder in ("broker", "broker-processed", "broker-control"):
            (Path(state_dir) / folder).mkdir()
        mcp_server = [sys.executable, "-m", "apps.demo_shop.shipping", "--port", str(MCP_PORT),
                      "--state", str(Path(state_dir) / "demo-shipping.json")]
        web_server = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload",
                      "--insecure"]
        worker = [sys.executable, "-m", "celery", "-A", "toolhub", "--quiet", "worker", "--concurrency", "1"]
        with serving("demo MCP server", mcp_server, MCP_PORT, env), \
                serving("web server", web_server, port, env), serving("worker", worker, None, env):
            shoot_mcp_import(base, shipping.pk)
            make_drift()
            shoot(base, draft)
            shoot_stdio(base, launcher_id, stdio_id)
            shoot_capability(base, ask_for_cancel(base))
    print("Saved docs/admin-mcp-import.png, admin-version.png, admin-version-unsaved.png, "
          "admin-dashboard.png,\nadmin-triage.png, admin-triage-entry.png, admin-invocations.png, "
          "admin-approval.png, "
          "admin-payments-faults.png,\nadmin-openapi-import.png, admin-credential.png, "
          "admin-drift-findings.png, admin-drift-finding.png,\nadmin-mcp-launcher.png, "
          "admin-stdio-upstream.png, admin-capability-request.png")


if __name__ == "__main__":
    main()
