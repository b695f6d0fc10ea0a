"""A tool of another phase exists (issue 11, item 11): the hint says which phase offers it,
naming only what the agent may see, and the capability log and dashboard count such calls
apart from tools that exist nowhere."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from apps.capabilities.models import CapabilityRequest
from apps.catalog.models import Tool, Toolset, ToolsetPhase
from tests.admin.conftest import logged_in
from tests.factories import TenantFactory
from tests.gateway.conftest import invoke

pytestmark = pytest.mark.django_db


def test_a_tool_of_another_phase_says_which_phase_offers_it(api, demo_tools, session_for):
    response = invoke(api, "refund_payment", {"order_id": "ORD-000008", "amount_cents": 100},
                      session=session_for("u-1"), toolset="support", phase="lookup")

    body = response.json()
    assert (response.status_code, body["kind"], body["recoverable"]) == (200, "unknown_tool", True)
    assert body["hint"].startswith(
        "refund_payment is available in phase resolve of toolset support; it cannot be called here."
    )
    assert '"phase": "resolve"' in body["hint"]
    assert "No available tool is close" not in body["hint"]
    assert body["available_in"] == [{"toolset": "support", "phase": "resolve"}]


def test_the_hint_names_no_toolset_or_phase_of_another_tenant(api, demo_tools):
    other = TenantFactory(slug="globex")
    desk = Toolset.objects.create(name="globex_desk", tenant=other)
    ToolsetPhase.objects.create(toolset=desk, name="globex_refunds").tools.set(
        Tool.objects.filter(name="refund_payment")
    )

    body = invoke(api, "refund_payment", "{}", toolset="support", phase="lookup").json()

    assert body["available_in"] == [{"toolset": "support", "phase": "resolve"}]
    assert "globex" not in json.dumps(body)


@pytest.mark.django_db(transaction=True)  # request_capability runs in the executor's thread
def test_the_capability_log_counts_phase_misses_apart_from_missing_tools(api, agent, demo_tools):
    invoke(api, "refund_payment", "{}", toolset="support", phase="lookup", call_id="c1")
    invoke(api, "refund_payment", "{}", toolset="support", phase="lookup", call_id="c2")
    invoke(api, "launch_rocket", "{}", toolset="support", phase="lookup", call_id="c3")
    invoke(api, "request_capability", {"capability": "refund payment", "reason": "The user asked.",
                                       "example_arguments": None}, call_id="c4")

    rows = {(r.name, r.reason): r.count for r in CapabilityRequest.objects.filter(tenant=agent.tenant)}
    assert rows == {
        ("refund_payment", "not_in_phase"): 2,
        ("refund_payment", "unknown"): 1,
        ("launch_rocket", "unknown"): 1,
    }


def test_the_dashboard_and_the_admin_show_the_two_apart(api, demo_tools):
    invoke(api, "refund_payment", "{}", toolset="support", phase="lookup", call_id="c1")
    invoke(api, "launch_rocket", "{}", toolset="support", phase="lookup", call_id="c2")
    root = logged_in(User.objects.create_superuser("root", password="pw"))

    page = root.get(reverse("admin:toolhub_dashboard"))
    misses = root.get(reverse("admin:capabilities_capabilityrequest_changelist"), {"reason": "not_in_phase"})
    missing = root.get(reverse("admin:capabilities_capabilityrequest_changelist"), {"reason": "unknown"})

    overview = page.context["overview"]
    assert [r.name for r in overview.capability_requests] == ["launch_rocket"]
    assert [r.name for r in overview.phase_misses] == ["refund_payment"]
    assert "Tools called outside their phase" in page.content.decode()
    assert [r.name for r in misses.context["cl"].result_list] == ["refund_payment"]
    assert [r.name for r in missing.context["cl"].result_list] == ["launch_rocket"]
