"""request_capability finds what was asked for among the agent's granted tools and opens the
match to the task: the phase prunes the list, it does not forbid the tool."""

from __future__ import annotations

from typing import Any

from django.test import Client

from apps.audit.models import AuditEvent
from apps.capabilities.models import CapabilityRequest
from apps.catalog.models import Tool, ToolsetPhase
from apps.common.catalog_generation import catalog_changed
from apps.demo_shop.models import DemoOrder
from apps.tenancy.models import Grant, TaskToolOpening, Tenant, TenantPolicy
from tests.e2e.conftest import demo

__all__ = ["demo"]

LOOKUP = {"toolset": "support", "phase": "lookup"}
CANCEL = {"capability": "cancel an order", "reason": "The user wants to cancel an order they placed.",
          "example_arguments": None}


def ask(demo: Any, arguments: dict[str, Any], *, task_id: str = "t-ask", **place: str) -> dict[str, Any]:
    return demo.invoke("request_capability", arguments, task_id=task_id, call_id="ask", **(place or LOOKUP))


def pending_order() -> str:
    return DemoOrder.objects.filter(user_id="u-1001", status="pending").order_by("order_id").first().order_id


def cancel(demo: Any, *, task_id: str = "t-ask", call_id: str = "c1") -> dict[str, Any]:
    arguments = {"order_id": pending_order(), "reason": "customer_request"}
    return demo.invoke("cancel_order", arguments, task_id=task_id, call_id=call_id, **LOOKUP)


def test_a_granted_tool_of_a_later_phase_is_found_and_opened_to_the_task(demo):
    assert cancel(demo, call_id="before")["kind"] == "unknown_tool"

    body = ask(demo, CANCEL)

    match = body["data"]["matches"][0]
    assert (match["name"], match["callable"], match["toolset"], match["phase"]) == (
        "cancel_order", True, "support", "resolve"
    )
    parameters = match["parameters"]["properties"]
    assert "order_id" in parameters and "user_id" not in parameters
    assert body["data"]["hint"].startswith("cancel_order is open to this task (t-ask) now")
    assert cancel(demo)["status"] == "ok"
    # Another task is where it was: the phase still prunes.
    assert cancel(demo, task_id="t-other")["kind"] == "unknown_tool"


def test_an_opening_is_recorded_audited_and_shown_on_the_request(demo, admin_client: Client):
    ask(demo, CANCEL)

    opening = TaskToolOpening.objects.get()
    assert (opening.task_id, opening.tool.name, opening.capability, opening.phase) == (
        "t-ask", "cancel_order", "cancel_order", "lookup"
    )
    assert AuditEvent.objects.filter(action="task.tool_opened").count() == 1
    request = CapabilityRequest.objects.get(name="cancel_order")
    assert request.samples[0]["opened"] == ["cancel_order"]
    page = admin_client.get(f"/admin/capabilities/capabilityrequest/{request.pk}/change/")
    assert "cancel_order to task t-ask" in page.content.decode()


def test_a_gating_phase_keeps_its_tools_closed_until_the_task_reaches_it(demo):
    ToolsetPhase.objects.filter(toolset__name="support", name="resolve").update(gates=True)
    catalog_changed()

    body = ask(demo, CANCEL)

    match = body["data"]["matches"][0]
    assert (match["name"], match["callable"]) == ("cancel_order", False)
    assert "phase resolve" in match["closed"] and "parameters" not in match
    assert cancel(demo)["kind"] == "unknown_tool"
    assert not TaskToolOpening.objects.exists()


def test_a_tenant_policy_can_switch_opening_off(demo):
    TenantPolicy.objects.create(tenant=Tenant.objects.get(slug="demo"), open_on_request=False)
    catalog_changed()

    order = pending_order()

    match = ask(demo, CANCEL)["data"]["matches"][0]

    assert match["callable"] is False and "policy" in match["closed"]
    assert cancel(demo)["kind"] == "unknown_tool"
    assert not TaskToolOpening.objects.exists()
    assert DemoOrder.objects.get(order_id=order).status == "pending"


def test_a_tenant_policy_caps_the_tools_a_task_opens(demo):
    TenantPolicy.objects.create(tenant=Tenant.objects.get(slug="demo"), max_opened_per_task=1)
    catalog_changed()
    refund = {"capability": "refund a payment", "reason": "The user wants their money back for an order.",
              "example_arguments": None}

    ask(demo, CANCEL)
    second = ask(demo, refund)["data"]["matches"][0]

    assert (second["name"], second["callable"]) == ("refund_payment", False)
    assert "opened 1 tools already" in second["closed"]
    assert list(TaskToolOpening.objects.values_list("tool__name", flat=True)) == ["cancel_order"]


def test_nothing_matching_is_recorded_and_the_closest_tools_are_named(demo):
    body = ask(demo, {"capability": "translate a poem", "reason": "The user wants a poem in French.",
                      "example_arguments": None})

    assert body["data"]["matches"] == [] and len(body["data"]["closest"]) == 3
    assert body["data"]["closest"][0]["name"] in body["data"]["hint"]
    assert CapabilityRequest.objects.get(name="translate_poem").count == 1
    assert not TaskToolOpening.objects.exists()


def test_a_tool_the_agent_is_not_granted_is_never_named(demo):
    Grant.objects.filter(tool__name="cancel_order").delete()
    catalog_changed()

    body = ask(demo, CANCEL)

    named = {m["name"] for m in body["data"]["matches"] + body["data"].get("closest", [])}
    assert "cancel_order" not in named and Tool.objects.filter(name="cancel_order").exists()
    assert cancel(demo)["kind"] in ("unknown_tool", "forbidden")
    assert not TaskToolOpening.objects.exists()


def test_a_tool_already_offered_where_the_task_is_is_callable_as_it_is(demo):
    body = ask(demo, CANCEL, toolset="support", phase="resolve")

    assert body["data"]["matches"][0]["callable"] is True
    assert not TaskToolOpening.objects.exists()
