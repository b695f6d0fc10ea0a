"""What agents could not do is recorded, grouped and counted per tenant, and answered."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps as django_apps
from django.core.exceptions import ValidationError
from django.db import connection
from django.utils import timezone

from apps.audit.models import AuditEvent
from apps.capabilities.models import CapabilityRequest
from apps.capabilities.services import capability_request_set_status
from apps.catalog.models import Tool
from apps.common.capability_names import capability_name
from apps.tenancy.services import agent_key_issue
from tests.factories import AgentFactory, TenantFactory
from tests.gateway.conftest import invoke


def request_capability(api, capability, reason="The user asked for it.", example=None, **extra):
    arguments = {"capability": capability, "reason": reason, "example_arguments": example}
    return invoke(api, "request_capability", json.dumps(arguments), **extra)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Export orders as CSV", "export_order_csv"),
        ("exportOrdersAsCsv", "export_order_csv"),
        ("  export_orders-as.CSV!! ", "export_order_csv"),
        ("export_orders_csv", "export_order_csv"),
        ("an export of all the orders in CSV", "export_order_csv"),
        ("check the order status", "check_order_status"),
        ("list deliveries", "list_delivery"),
        ("导出订单 CSV", "导出订单_csv"),
        ("???", "unnamed"),
    ],
)
def test_capability_names_group_spellings_of_the_same_need(text, name):
    assert capability_name(text) == name


@pytest.mark.django_db
def test_an_unknown_tool_is_recorded_with_a_sample_and_counted(api, agent, demo_tools, session_for):
    first = invoke(api, "exportOrdersCsv", '{"month": "2026-01"}', session=session_for("u-1"), call_id="c1")
    second = invoke(api, "export_orders_csv", {}, task_id="t-2", call_id="c2")

    body = first.json()
    assert (body["kind"], body["recoverable"]) == ("unknown_tool", True)
    assert "search_orders" in body["suggestions"] and "request_capability" in body["hint"]
    assert second.json()["kind"] == "unknown_tool"
    row = CapabilityRequest.objects.get()
    assert (row.tenant_id, row.name, row.count, row.status) == (
        agent.tenant_id,
        "export_order_csv",
        2,
        "open",
    )
    assert row.first_seen <= row.last_seen
    newest, oldest = row.samples
    assert newest["tool"] == "export_orders_csv" and newest["task_id"] == "t-2"
    assert oldest == {
        "at": oldest["at"],
        "source": "unknown_tool",
        "tool": "exportOrdersCsv",
        "agent": "helper",
        "task_id": "t-1",
        "call_id": "c1",
        "toolset": "",
        "phase": "",
        "arguments": '{"month": "2026-01"}',
    }


@pytest.mark.django_db
def test_a_tool_outside_the_phase_is_recorded_as_outside_the_toolset(api, demo_tools):
    response = invoke(api, "cancel_order", "{}", toolset="support", phase="lookup")

    assert response.json()["kind"] == "unknown_tool"
    row = CapabilityRequest.objects.get()
    assert row.name == "cancel_order"
    assert row.samples[0]["source"] == "outside_toolset"
    assert (row.samples[0]["toolset"], row.samples[0]["phase"]) == ("support", "lookup")


@pytest.mark.django_db
def test_a_dry_run_records_nothing(api, demo_tools):
    response = invoke(api, "export_orders_csv", "{}", dry_run=True)

    assert response.json()["kind"] == "unknown_tool"
    assert not CapabilityRequest.objects.exists()


@pytest.mark.django_db
def test_counts_are_per_tenant(api, demo_tools):
    other_agent = AgentFactory(tenant=TenantFactory(slug="globex"))
    other = type(api)()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=other_agent).secret}")

    invoke(api, "export_orders_csv", "{}")
    invoke(api, "export_orders_csv", "{}", call_id="c2")
    invoke(other, "export_orders_csv", "{}")

    counts = dict(CapabilityRequest.objects.values_list("tenant__slug", "count"))
    assert counts == {"acme": 2, "globex": 1}


@pytest.mark.django_db
def test_a_failing_database_write_does_not_fail_the_call(api, demo_tools, caplog):
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE capabilities_capabilityrequest RENAME TO capabilities_gone")

    response = invoke(api, "export_orders_csv", "{}")

    assert response.status_code == 200
    assert response.json()["kind"] == "unknown_tool"
    assert "could not record the unknown tool" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_request_capability_records_the_need_and_says_what_to_tell_the_user(api, demo_tools):
    response = request_capability(
        api, "Export orders as CSV", example='{"month": "2026-01"}', toolset="support", phase="lookup"
    )
    again = request_capability(api, "export orders as csv", task_id="t-2")

    body = response.json()
    assert (body["status"], body["tool"]) == ("ok", "request_capability")
    assert body["data"]["recorded"] == {
        "capability": "export_order_csv",
        "status": "open",
        "times_requested": 1,
    }
    assert "Tell the user" in body["data"]["hint"]
    assert again.json()["data"]["recorded"]["times_requested"] == 2
    row = CapabilityRequest.objects.get()
    assert row.samples[1] == {
        "at": row.samples[1]["at"],
        "source": "request_capability",
        "capability": "export orders as csv",
        "reason": "The user asked for it.",
        "example_arguments": '{"month": "2026-01"}',
        "task_id": "t-1",
        "call_id": "call_1",
    }


@pytest.mark.django_db(transaction=True)
def test_request_capability_tells_the_model_the_operators_answer(api, demo_tools):
    request_capability(api, "export orders as csv")
    row = CapabilityRequest.objects.get()
    capability_request_set_status(
        request=row, status="declined", actor="admin:ops", reason="Exports are manual."
    )

    body = request_capability(api, "export orders as csv", task_id="t-2").json()

    assert body["data"]["recorded"]["status"] == "declined"
    assert "Exports are manual." in body["data"]["hint"]


@pytest.mark.django_db
def test_request_capability_arguments_are_validated_like_any_tool(api):
    response = invoke(api, "request_capability", '{"capability": "x"}')

    body = response.json()
    assert (body["kind"], body["recoverable"]) == ("invalid_args", True)
    assert not CapabilityRequest.objects.exists()


@pytest.fixture
def open_request(agent):
    row = CapabilityRequest.objects.create(
        tenant=agent.tenant,
        name="export_order_csv",
        count=3,
        first_seen="2026-01-01T00:00:00Z",
        last_seen="2026-01-02T00:00:00Z",
    )
    return row


@pytest.mark.django_db
def test_the_operators_answer_and_its_audit_trail(open_request, publish_tool):
    tool = publish_tool("export_orders").tool

    planned = capability_request_set_status(request=open_request, status="planned", actor="admin:ops")
    fulfilled = capability_request_set_status(
        request=open_request, status="fulfilled", actor="admin:ops", fulfilled_by=tool
    )
    declined = capability_request_set_status(
        request=open_request, status="declined", actor="admin:ops", reason="  Not for now.  "
    )
    reopened = capability_request_set_status(request=open_request, status="open", actor="admin:ops")

    assert planned.status == "planned"
    assert (fulfilled.status, fulfilled.fulfilled_by) == ("fulfilled", tool)
    assert (declined.status, declined.fulfilled_by, declined.decline_reason) == (
        "declined",
        None,
        "Not for now.",
    )
    assert (reopened.status, reopened.decline_reason) == ("open", "")
    events = AuditEvent.objects.filter(target_id=str(open_request.pk)).order_by("pk")
    assert [e.action for e in events] == [
        "capability.planned",
        "capability.fulfilled",
        "capability.declined",
        "capability.open",
    ]
    assert events[1].data["fulfilled_by"] == "export_orders"
    assert events[2].note == "Not for now."


@pytest.mark.django_db
def test_an_answer_missing_its_tool_or_reason_is_refused(open_request):
    other_tenant_tool = Tool.objects.create(name="their_tool", tenant=TenantFactory(slug="globex"))

    with pytest.raises(ValidationError, match="Name the tool"):
        capability_request_set_status(request=open_request, status="fulfilled", actor="admin:ops")
    with pytest.raises(ValidationError, match="another tenant"):
        capability_request_set_status(
            request=open_request, status="fulfilled", actor="admin:ops", fulfilled_by=other_tenant_tool
        )
    with pytest.raises(ValidationError, match="Say why"):
        capability_request_set_status(request=open_request, status="declined", actor="admin:ops", reason=" ")

    open_request.refresh_from_db()
    assert open_request.status == "open"
    assert not AuditEvent.objects.exists()


@pytest.mark.django_db
def test_requests_recorded_under_spellings_of_one_need_are_merged_by_the_migration():
    merge = importlib.import_module("apps.capabilities.migrations.0005_group_near_duplicates")
    tenant = TenantFactory()
    now = timezone.now()
    for name, count, status in (("export_orders_csv", 3, "planned"), ("export_orders_as_csv", 1, "open")):
        CapabilityRequest.objects.create(
            tenant=tenant, name=name, count=count, status=status, first_seen=now, last_seen=now,
            samples=[{"at": now.isoformat(), "capability": name}],
        )

    merge.merge_near_duplicates(django_apps, None)

    merged = CapabilityRequest.objects.get(tenant=tenant)
    assert (merged.name, merged.count, merged.status) == ("export_order_csv", 4, "planned")
    assert len(merged.samples) == 2
