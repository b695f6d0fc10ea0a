"""Deciding pending approvals in the admin: approve or reject with a note, by operators only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.audit.models import AuditEvent
from apps.ledger.models import Approval, LedgerEntry, LedgerState
from tests.gateway.conftest import invoke

from .conftest import logged_in
from .test_triage_admin import member

pytestmark = pytest.mark.django_db


@pytest.fixture
def pending(api, publish_tool, session_for) -> Approval:
    """A refund that always needs an operator's approval, waiting for one."""
    publish_tool("refund", side_effect="write", approval={"always": True})
    body = invoke(api, "refund", '{"query": "order 7"}', session=session_for("u-1")).json()
    assert body["status"] == "pending_approval"
    return Approval.objects.get(entry_id=body["execution_id"])


def _button(approval: Approval, name: str) -> str:
    return reverse("admin:ledger_pendingapproval_button", args=[approval.pk, name])


def test_pending_approvals_are_listed_with_their_call(pending, agent):
    operator = logged_in(member("olga", "operators", agent.tenant))

    response = operator.get(reverse("admin:ledger_pendingapproval_changelist"))

    assert list(response.context["cl"].result_list) == [pending]
    page = response.content.decode()
    assert "refund v1" in page and "order 7" in page and "always needs an operator" in page


def test_an_operator_approves_with_a_note_and_the_call_is_enqueued(
    pending, agent, django_capture_on_commit_callbacks
):
    operator = logged_in(member("olga", "operators", agent.tenant))

    with django_capture_on_commit_callbacks() as callbacks:
        response = operator.post(_button(pending, "approve"), {"note": "Customer confirmed by phone."},
                                 follow=True)

    pending.refresh_from_db()
    assert pending.status == "approved" and pending.decided_by == "admin:olga"
    assert len(callbacks) == 1  # the execution, enqueued once the decision commits
    assert "The call is approved." in response.content.decode()
    assert AuditEvent.objects.get(action="approval.approved").note == "Customer confirmed by phone."
    listed = operator.get(reverse("admin:ledger_pendingapproval_changelist"))
    assert list(listed.context["cl"].result_list) == []


def test_a_rejection_refuses_the_call_with_the_operators_note(pending, agent, api, session_for):
    operator = logged_in(member("olga", "operators", agent.tenant))

    operator.post(_button(pending, "reject"), {"note": "Amount looks wrong."})

    entry = LedgerEntry.objects.get(pk=pending.entry_id)
    assert entry.state == LedgerState.FAILED
    poll = api.get(f"/api/v1/executions/{entry.pk}").json()
    assert poll["kind"] == "forbidden" and "Amount looks wrong." in poll["hint"]


def test_deciding_needs_a_note(pending, agent):
    operator = logged_in(member("olga", "operators", agent.tenant))

    response = operator.post(_button(pending, "approve"), {"note": " "}, follow=True)

    assert "a note is required to approve or reject" in response.content.decode()
    pending.refresh_from_db()
    assert pending.status == "pending"


def test_an_expired_approval_is_refused_with_a_clear_message(pending, agent):
    Approval.objects.filter(pk=pending.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    operator = logged_in(member("olga", "operators", agent.tenant))

    response = operator.post(_button(pending, "approve"), {"note": "go"}, follow=True)

    assert "Nothing changed: This approval has expired" in response.content.decode()
    pending.refresh_from_db()
    assert pending.status == "pending"


def test_an_auditor_cannot_decide(pending, agent):
    auditor = logged_in(member("aude", "auditors", agent.tenant))

    page = auditor.get(reverse("admin:ledger_pendingapproval_change", args=[pending.pk]))
    refused = auditor.post(_button(pending, "approve"), {"note": "sure"})

    assert page.status_code == 200 and page.context["toolhub_panel_buttons"] == []
    assert refused.status_code == 403
    pending.refresh_from_db()
    assert pending.status == "pending"
    assert not AuditEvent.objects.filter(action__startswith="approval.").exists()


def test_another_tenants_staff_do_not_see_the_approval(pending):
    from tests.factories import TenantFactory

    stranger = logged_in(member("sam", "operators", TenantFactory(slug="globex")))

    listed = stranger.get(reverse("admin:ledger_pendingapproval_changelist"))
    refused = stranger.post(_button(pending, "approve"), {"note": "mine now"})

    assert list(listed.context["cl"].result_list) == []
    assert refused.status_code == 302
    pending.refresh_from_db()
    assert pending.status == "pending"
