"""Only the platform grants shared tools: a tenant's curator cannot hand one to their tenant.

Found from outside: a tenant curator added a grant of the shared `refund_payment` to their
own tenant in the admin, and their agent then called it with the platform's payments key.
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from apps.catalog.models import Tool, ToolVersion
from apps.tenancy.models import Grant
from apps.tenancy.services import agent_key_issue
from tests.gateway.callables import RUNS
from tests.gateway.executors.http.test_http_upstreams import PARAMETERS

pytestmark = pytest.mark.django_db

@pytest.fixture
def refund_payment(world) -> Tool:
    """A shared tool that would act with the platform's secret; its runs are recorded."""
    tool = Tool.objects.create(name="refund_payment")
    ToolVersion.objects.create(
        tool=tool, number=1, status="published", published_at=timezone.now(),
        description="refund_payment: refunds an order. Not for looking anything up.",
        parameters=PARAMETERS, side_effect="readonly", executor="python",
        executor_config={"callable": "tests.echo"}, timeout_s=2.0,
    )
    return tool


def acme_agent_calls(world, name: str) -> dict:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=world.acme.agent).secret}")
    body = {"task_id": "t-1", "call": {"id": "call_1", "name": name, "arguments": {"order_id": "globex-1"}}}
    response = client.post("/api/v1/invoke", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def post_grant_form(staff, world, tool: Tool):
    """The admin's "add grant" form, posted for every agent of acme."""
    return staff.post(reverse("admin:tenancy_grant_add"), {
        "tenant": world.acme.tenant.pk, "agent": "", "tool": tool.pk, "pinned_version": "",
    })


def test_a_tenant_curator_cannot_grant_their_tenant_a_shared_tool(
    world, acme_staff, refund_payment, django_capture_on_commit_callbacks
):
    # given a curator of acme, logged into the admin, who posts the grant form by hand
    with django_capture_on_commit_callbacks(execute=True):
        response = post_grant_form(acme_staff, world, refund_payment)

    # then the form refuses it and no grant exists
    assert response.status_code == 200
    assert "Select a valid choice" in str(response.context["adminform"].form.errors["tool"])
    assert not Grant.objects.filter(tool=refund_payment).exists()
    # and acme's agent cannot call the tool: nothing ran
    envelope = acme_agent_calls(world, "refund_payment")
    assert (envelope["status"], envelope["kind"]) == ("error", "forbidden")
    assert RUNS["tests.echo"] == 0


def test_the_grant_form_offers_tenant_staff_only_their_tenants_tools(world, acme_staff, refund_payment):
    response = acme_staff.get(reverse("admin:tenancy_grant_add"))

    fields = response.context["adminform"].form.fields
    assert set(fields["tool"].queryset) == {world.acme.tool}
    assert set(fields["pinned_version"].queryset) == {world.acme.version}
    assert "refund_payment" not in response.content.decode()


def test_a_platform_grant_of_a_shared_tool_is_view_only_for_tenant_staff(world, acme_staff, refund_payment):
    # given the platform granted refund_payment to acme's bot only
    grant = Grant.objects.create(tenant=world.acme.tenant, agent=world.acme.agent, tool=refund_payment)
    change = reverse("admin:tenancy_grant_change", args=[grant.pk])

    # when acme's curator opens it, then posts it widened to every agent of acme
    page = acme_staff.get(change)
    response = acme_staff.post(change, {
        "tenant": world.acme.tenant.pk, "agent": "", "tool": refund_payment.pk, "pinned_version": "",
    })

    # then the page shows it without a save button, and the change is refused
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    assert response.status_code == 403
    grant.refresh_from_db()
    assert grant.agent == world.acme.agent


def test_a_superuser_grants_a_shared_tool_to_the_tenant_they_choose(
    world, superuser, refund_payment, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = post_grant_form(superuser, world, refund_payment)

    assert response.status_code == 302
    grant = Grant.objects.get(tool=refund_payment)
    assert (grant.tenant, grant.granted_by) == (world.acme.tenant, "admin:root")
    assert grant.granted_by_platform is True
    assert acme_agent_calls(world, "refund_payment")["status"] == "ok"
    assert RUNS["tests.echo"] == 1
