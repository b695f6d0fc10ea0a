"""The capability-request admin: most requested first, samples, status actions, tenant scope."""

from __future__ import annotations

import pytest
from django.contrib.admin import helpers
from django.contrib.auth.models import Permission, User
from django.utils import timezone

from apps.capabilities.models import CapabilityRequest
from apps.catalog.models import Tool
from apps.tenancy.models import StaffScope
from tests.factories import TenantFactory

CHANGELIST = "/admin/capabilities/capabilityrequest/"


def capability(tenant, name, count, **fields):
    now = timezone.now()
    return CapabilityRequest.objects.create(
        tenant=tenant, name=name, count=count, first_seen=now, last_seen=now, **fields
    )


@pytest.fixture
def rows(db):
    acme, globex = TenantFactory(slug="acme"), TenantFactory(slug="globex")
    return {
        "rare": capability(acme, "print_labels", 2),
        "common": capability(
            acme,
            "export_orders_csv",
            9,
            samples=[{"source": "unknown_tool", "tool": "exportOrdersCsv", "task_id": "t-7"}],
        ),
        "theirs": capability(globex, "track_parcels", 5),
    }


@pytest.fixture
def superuser_client(client, db):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


def staff_client(client, tenant=None):
    user = User.objects.create_user("ops", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__endswith="capabilityrequest"))
    if tenant is not None:
        StaffScope.objects.create(user=user, tenant=tenant)
    client.force_login(user)
    return client


def listed(response):
    return [row.name for row in response.context["cl"].result_list]


def act(client, action, selected, **data):
    return client.post(
        CHANGELIST, {"action": action, helpers.ACTION_CHECKBOX_NAME: [r.pk for r in selected], **data}
    )


def test_the_list_is_sorted_by_count_with_the_answer(superuser_client, rows):
    rows["rare"].status = "declined"
    rows["rare"].decline_reason = "Labels are printed in the warehouse."
    rows["rare"].save()

    response = superuser_client.get(CHANGELIST)

    assert response.status_code == 200
    assert listed(response) == ["export_orders_csv", "track_parcels", "print_labels"]
    assert "declined: Labels are printed in the warehouse." in response.content.decode()


def test_the_detail_shows_the_samples(superuser_client, rows):
    response = superuser_client.get(f"{CHANGELIST}{rows['common'].pk}/change/")

    page = response.content.decode()
    assert response.status_code == 200
    assert "exportOrdersCsv" in page and "t-7" in page


def test_scoped_staff_see_only_their_tenant(client, rows):
    staff = staff_client(client, tenant=rows["common"].tenant)

    response = staff.get(CHANGELIST)
    other = staff.get(f"{CHANGELIST}{rows['theirs'].pk}/change/")

    assert listed(response) == ["export_orders_csv", "print_labels"]
    assert other.status_code == 302 and CapabilityRequest.objects.filter(name="track_parcels").exists()


def test_unscoped_staff_see_nothing(client, rows):
    response = staff_client(client).get(CHANGELIST)

    assert listed(response) == []


def test_mark_planned_and_reopen(superuser_client, rows):
    act(superuser_client, "mark_planned", [rows["common"], rows["rare"]])
    planned = {r.name: r.status for r in CapabilityRequest.objects.all()}
    act(superuser_client, "reopen", [rows["rare"]])

    assert planned == {"export_orders_csv": "planned", "print_labels": "planned", "track_parcels": "open"}
    assert CapabilityRequest.objects.get(name="print_labels").status == "open"


def test_fulfilled_asks_for_the_tool_first(superuser_client, rows):
    tool = Tool.objects.create(name="export_orders", tenant=rows["common"].tenant)

    form_page = act(superuser_client, "mark_fulfilled", [rows["common"]])
    applied = act(superuser_client, "mark_fulfilled", [rows["common"]], apply="1", fulfilled_by=tool.pk)

    assert form_page.status_code == 200 and "Fulfilled by which tool?" in form_page.content.decode()
    assert applied.status_code == 302
    row = CapabilityRequest.objects.get(pk=rows["common"].pk)
    assert (row.status, row.fulfilled_by) == ("fulfilled", tool)


def test_declined_needs_a_reason(superuser_client, rows):
    without = act(superuser_client, "mark_declined", [rows["rare"]], apply="1", reason="")
    still_open = CapabilityRequest.objects.get(pk=rows["rare"].pk).status
    act(superuser_client, "mark_declined", [rows["rare"]], apply="1", reason="Done in the warehouse.")

    assert without.status_code == 200 and "This field is required." in without.content.decode()
    assert still_open == "open"
    row = CapabilityRequest.objects.get(pk=rows["rare"].pk)
    assert (row.status, row.decline_reason) == ("declined", "Done in the warehouse.")


def test_scoped_staff_cannot_pick_another_tenants_tool(client, rows):
    staff = staff_client(client, tenant=rows["common"].tenant)
    theirs = Tool.objects.create(name="their_export", tenant=rows["theirs"].tenant)

    response = act(staff, "mark_fulfilled", [rows["common"]], apply="1", fulfilled_by=theirs.pk)

    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert CapabilityRequest.objects.get(pk=rows["common"].pk).status == "open"
