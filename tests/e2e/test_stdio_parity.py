"""A stdio MCP server gets what an MCP server at a URL gets (drift: test_stdio_drift.py): its
tools imported (`import_mcp` and the admin's "Import tools" page), a write through the ledger
with the ledger's key (a replay answers the stored result), a write whose answer came too late
or whose server died after applying it settled through the server's status tool (or handed to
triage without one), and a server that is down answering that nothing was sent. The server is
tests/stdio_shipping_server.py (tests/e2e/stdio_shipping.py), run by the real MCP bridge under
bubblewrap; the tests mirror the HTTP server's (tests/gateway/executors/mcp/test_mcp_reconcile.py
and test_mcp_executor.py, tests/admin/test_mcp_tools_import_admin.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from apps.catalog.models import ToolVersion
from apps.catalog.services import version_create_draft_from, version_publish, version_save_draft
from apps.gateway.reconciliation import ledger_reconcile_entry
from apps.ledger.models import LedgerEntry, LedgerState
from apps.upstreams.models import Upstream
from tests.admin.test_mcp_tools_import_admin import curator, page_of
from tests.agent_tools import agent, api  # noqa: F401
from tests.e2e.stdio_shipping import (
    bookings,
    break_server,
    break_server_once_booked,
    mend_server,
    shipping,  # noqa: F401
    status_tool,
)
from tests.gateway.conftest import invoke
from tests.imports.conftest import import_mcp
from tests.stdio_shipping_server import HANG

pytestmark = pytest.mark.django_db


def republished(tool: str, **fields) -> ToolVersion:
    """A new published version of `tool` with `fields` changed, as a curator makes one."""
    draft = version_create_draft_from(
        version=ToolVersion.objects.get(tool__name=tool, status="published"), actor="test"
    )
    for name, value in fields.items():
        setattr(draft, name, value)
    version_save_draft(version=draft, actor="test")
    return version_publish(version=draft, actor="test")


def test_a_write_goes_through_the_ledger_with_its_key_and_a_replay_answers_the_stored_result(
    shipping, api  # noqa: F811
):
    # given
    imported = import_mcp("--tools", "schedule_pickup,pickup_status", "--publish", "--grant", "helper")

    # when
    body = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()
    replay = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()

    # then: the write carried the ledger's key, reached the server once, and the replay was
    # answered from the ledger
    assert "schedule_pickup: new → schedule_pickup v1 (published)" in imported
    version = ToolVersion.objects.get(tool__name="schedule_pickup")
    assert (version.side_effect, version.executor_config["idempotency_argument"]) == (
        "write", "idempotency_key"
    )
    entry = LedgerEntry.objects.get()
    assert (body["status"], entry.state) == ("ok", LedgerState.COMMITTED), body
    assert body["data"] == {"pickup_id": "pu-1", "shipment_id": "s-1"}
    assert bookings(shipping)["arrived"] == [entry.key]
    assert (replay["status"], replay["cached"], replay["data"]) == ("ok", True, body["data"])


def write_answered_too_late(api, state: Path) -> tuple[dict, LedgerEntry]:  # noqa: F811
    """schedule_pickup, applied by the server but answered after its 2 s timeout."""
    republished("schedule_pickup", timeout_s=2.0)
    (state / HANG).touch()
    try:
        body = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()
    finally:
        (state / HANG).unlink()
    return body, LedgerEntry.objects.get()


def test_a_write_answered_too_late_is_settled_committed_through_the_status_tool(shipping, api):  # noqa: F811
    # given: the server booked the pickup, but its answer came after the timeout
    import_mcp("--tools", "schedule_pickup,pickup_status", "--publish", "--grant", "helper")
    status_tool("pickup_status")
    body, entry = write_answered_too_late(api, shipping)
    assert (body["status"], body["kind"], entry.state) == ("error", "timeout", LedgerState.UNKNOWN), body
    assert bookings(shipping)["arrived"] == [entry.key]

    # when: the reconciler asks the status tool, through the bridge
    settled = ledger_reconcile_entry(entry_id=entry.pk)
    replay = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()

    # then: committed with what the server booked, which the replay answers; nothing booked again
    booked = bookings(shipping)
    assert settled == LedgerState.COMMITTED
    assert entry.reconcile_attempts.get().answer == "found"
    assert (replay["status"], replay["cached"], replay["data"]) == ("ok", True, booked["booked"][entry.key])
    assert booked["arrived"] == [entry.key]


def test_without_a_status_tool_a_write_answered_too_late_goes_to_triage(shipping, api):  # noqa: F811
    # given
    import_mcp("--tools", "schedule_pickup,pickup_status", "--publish", "--grant", "helper")
    body, entry = write_answered_too_late(api, shipping)
    assert entry.state == LedgerState.UNKNOWN, body

    # when
    settled = ledger_reconcile_entry(entry_id=entry.pk)

    # then: a person settles it
    entry.refresh_from_db()
    assert settled == LedgerState.UNKNOWN
    assert entry.triage_since is not None and entry.next_check_at is None
    assert "names no status tool" in entry.reconcile_attempts.get().note


def test_a_write_whose_server_died_after_booking_is_committed_through_the_status_tool(
    shipping, api, mcp_bridge  # noqa: F811
):
    # given: the server recorded the pickup, then died before answering
    import_mcp("--tools", "schedule_pickup,pickup_status", "--publish", "--grant", "helper")
    status_tool("pickup_status")
    (shipping / HANG).touch()
    watcher = break_server_once_booked(shipping, mcp_bridge)
    body = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()
    watcher.join()
    (shipping / HANG).unlink()
    entry = LedgerEntry.objects.get()
    assert (body["status"], body["kind"]) == ("error", "upstream_error"), body
    assert entry.state == LedgerState.UNKNOWN
    assert "Do not call again" in body["hint"]

    # when: it can start again, and the reconciler asks it
    mend_server(shipping, mcp_bridge)
    settled = ledger_reconcile_entry(entry_id=entry.pk)
    replay = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()

    # then: committed with the booking it made, which the replay answers; one booking
    assert settled == LedgerState.COMMITTED
    assert (replay["status"], replay["cached"], replay["data"]) == (
        "ok", True, {"pickup_id": "pu-1", "shipment_id": "s-1"}
    )
    assert bookings(shipping)["arrived"] == [entry.key]


def test_a_write_to_a_server_that_is_down_fails_with_nothing_sent_and_goes_through_once_it_is_back(
    shipping, api, mcp_bridge  # noqa: F811
):
    # given: the server was called, then died and cannot start
    import_mcp("--tools", "schedule_pickup", "--publish", "--grant", "helper")
    assert invoke(api, "schedule_pickup", {"shipment_id": "s-1"}, call_id="c1").json()["status"] == "ok"
    break_server(shipping, mcp_bridge)

    # when
    down = invoke(api, "schedule_pickup", {"shipment_id": "s-2"}, call_id="c2").json()
    mend_server(shipping, mcp_bridge)
    back = invoke(api, "schedule_pickup", {"shipment_id": "s-3"}, call_id="c3").json()

    # then: nothing was sent, as for a server at a URL that is down: certainly not applied,
    # and worth trying later; once it is back, the next write is applied once
    assert (down["status"], down["kind"]) == ("error", "upstream_error"), down
    assert "could not be reached; nothing was sent" in down["message"]
    assert "try again later" in down["hint"]
    assert (back["status"], back["data"]) == ("ok", {"pickup_id": "pu-2", "shipment_id": "s-3"}), back
    states = LedgerEntry.objects.order_by("created_at").values_list("state", flat=True)
    assert list(states) == [LedgerState.COMMITTED, LedgerState.FAILED, LedgerState.COMMITTED]
    assert len(bookings(shipping)["arrived"]) == 2


def test_the_admins_import_page_lists_the_servers_tools_and_imports_the_ticked_ones(shipping, agent):  # noqa: F811
    # given
    upstream = Upstream.objects.get(name="shipping")
    acme = curator("acme-curator", agent.tenant)

    # when
    upstream_page = acme.get(reverse("admin:upstreams_upstream_change", args=[upstream.pk])).content.decode()
    page = acme.get(page_of(upstream)).content.decode()
    imported = acme.post(page_of(upstream), {"tools": ["schedule_pickup", "pickup_status"]})

    # then
    assert f'href="{page_of(upstream)}" id="import-tools">Import tools</a>' in upstream_page
    assert "<code>track_shipment</code>" in page and "<code>schedule_pickup</code>" in page
    assert "Books a courier pickup of a shipment." in page
    row = page[page.index("<code>pickup_status</code>"):]
    assert "readonly" in row[: row.index("</tr>")]
    assert imported.status_code == 200
    drafts = {v.tool.name: v for v in ToolVersion.objects.select_related("tool")}
    assert set(drafts) == {"schedule_pickup", "pickup_status"}
    assert {v.status for v in drafts.values()} == {"draft"}
    assert drafts["schedule_pickup"].executor_config == {
        "upstream": "shipping", "tool": "schedule_pickup", "idempotency_argument": "idempotency_key"
    }
    assert reverse("admin:catalog_toolversion_change", args=[drafts["pickup_status"].pk]) in (
        imported.content.decode()
    )
