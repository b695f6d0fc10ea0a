"""The demo shipping MCP server as a real subprocess, through the official SDK client: its
tools, the idempotency key it honours (also across a restart), its status tool, its key
check and the drift it can be told to make."""

from __future__ import annotations

from datetime import date, timedelta

import httpx
from mcp.client.session import ClientSession

from apps.demo_shop.shipping.server import DESCRIPTIONS, DRIFTED_DESCRIPTION, reviewed_tool_definitions
from tests.mcp.test_mcp import run_client
from tests.shipping_upstream import shipping_server

TOMORROW = (date.today() + timedelta(days=1)).isoformat()
PICKUP = {"shipment_id": "SHP-000042", "pickup_date": TOMORROW, "time_window": "morning"}


def _call(server, tool: str, arguments: dict):
    async def steps(session: ClientSession):
        await session.initialize()
        return await session.call_tool(tool, arguments)

    return run_client(server.url, server.auth, steps)


def _listed(server) -> list[dict]:
    async def steps(session: ClientSession):
        await session.initialize()
        return (await session.list_tools()).tools

    tools = run_client(server.url, server.auth, steps)
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


def test_it_lists_its_three_tools_exactly_as_seed_demo_imports_them_and_tracks_a_shipment(tmp_path):
    with shipping_server(tmp_path / "state.json") as server:
        listed = _listed(server)
        tracked = _call(server, "track_shipment", {"shipment_id": "SHP-000042"})
        malformed = _call(server, "track_shipment", {"shipment_id": "42"})

    assert listed == reviewed_tool_definitions()
    hints = {t["name"]: t["annotations"] for t in listed}
    assert hints["track_shipment"]["readOnlyHint"] is True and hints["pickup_status"]["readOnlyHint"] is True
    assert hints["schedule_pickup"]["readOnlyHint"] is False
    assert tracked.is_error is False
    shipment = tracked.structured_content
    assert shipment["shipment_id"] == "SHP-000042" and shipment["pickup"] is None
    assert shipment["status"] in ("label_created", "in_transit", "out_for_delivery", "delivered")
    assert malformed.is_error is True


def test_the_same_idempotency_key_books_once_also_after_a_restart_and_the_status_tool_reports_it(tmp_path):
    state = tmp_path / "state.json"
    with shipping_server(state) as server:
        before = _call(server, "pickup_status", {"idempotency_key": "k-1"})
        first = _call(server, "schedule_pickup", {"idempotency_key": "k-1", **PICKUP})
    with shipping_server(state) as restarted:
        again = _call(restarted, "schedule_pickup", {"idempotency_key": "k-1", **PICKUP})
        reused = _call(restarted, "schedule_pickup",
                       {"idempotency_key": "k-1", **PICKUP, "time_window": "afternoon"})
        status = _call(restarted, "pickup_status", {"idempotency_key": "k-1"})
        unknown = _call(restarted, "pickup_status", {"idempotency_key": "k-2"})
        tracked = _call(restarted, "track_shipment", {"shipment_id": "SHP-000042"})

    assert before.structured_content == {"found": False}
    booked = first.structured_content
    assert booked["status"] == "scheduled" and booked["pickup_id"].startswith("pk_")
    assert again.is_error is False and again.structured_content == booked
    assert reused.is_error is True and "already used for another pickup" in reused.content[0].text
    assert status.structured_content == {"found": True, "result": booked}
    assert unknown.structured_content == {"found": False}
    assert tracked.structured_content["pickup"] == booked


def test_a_pickup_in_the_past_is_refused_and_nothing_is_booked(tmp_path):
    with shipping_server(tmp_path / "state.json") as server:
        refused = _call(server, "schedule_pickup",
                        {"idempotency_key": "k-past", **PICKUP, "pickup_date": "2020-01-01"})
        status = _call(server, "pickup_status", {"idempotency_key": "k-past"})

    assert refused.is_error is True and "nothing was booked" in refused.content[0].text
    assert status.structured_content == {"found": False}


def test_without_its_key_it_answers_401_and_runs_nothing(tmp_path):
    with shipping_server(tmp_path / "state.json") as server:
        wrong = httpx.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                           headers={"Authorization": "Bearer wrong"})
        drift = httpx.post(f"{server.base_url}/drift")
        listed = _listed(server)

    assert (wrong.status_code, drift.status_code) == (401, 401)
    assert {t["name"]: t["description"] for t in listed} == DESCRIPTIONS


def test_post_drift_changes_a_description_until_delete_also_across_a_restart(tmp_path):
    state = tmp_path / "state.json"
    with shipping_server(state) as server:
        changed = httpx.post(f"{server.base_url}/drift", headers=server.auth)
        custom = httpx.post(f"{server.base_url}/drift", headers=server.auth,
                            json={"tool": "pickup_status", "description": "Now says something else."})
        unknown = httpx.post(f"{server.base_url}/drift", headers=server.auth, json={"tool": "nope"})
    with shipping_server(state) as restarted:
        drifted = {t["name"]: t["description"] for t in _listed(restarted)}
        reset = httpx.delete(f"{restarted.base_url}/drift", headers=restarted.auth)
        after = {t["name"]: t["description"] for t in _listed(restarted)}

    assert changed.json() == {"tool": "track_shipment", "description": DRIFTED_DESCRIPTION}
    assert custom.status_code == 200 and unknown.status_code == 404
    assert drifted == {**DESCRIPTIONS, "track_shipment": DRIFTED_DESCRIPTION,
                       "pickup_status": "Now says something else."}
    assert reset.status_code == 200 and after == DESCRIPTIONS
