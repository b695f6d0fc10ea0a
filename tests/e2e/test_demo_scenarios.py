"""`manage.py demo_scenarios` against a live server and a real Celery worker: each scenario
leaves what the operator's pages show."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from apps.audit.models import Invocation
from apps.capabilities.models import CapabilityReason, CapabilityRequest
from apps.demo_shop.models import PaymentsFault
from apps.ledger.models import Approval, ApprovalStatus, LedgerEntry, LedgerState
from apps.ledger.selectors import triage_queue

pytestmark = pytest.mark.slow


def run_scenarios(url: str) -> str:
    out = StringIO()
    call_command("demo_scenarios", "--url", url, "--wait", "30", stdout=out)
    return out.getvalue()


def test_the_scenarios_leave_every_state_the_operator_pages_show(demo, live_server, celery_worker):
    # when
    output = run_scenarios(live_server.url)

    # then: a timed-out refund committed by reconciliation
    timed_out = LedgerEntry.objects.get(task_id__endswith="-timeout")
    assert timed_out.state == LedgerState.COMMITTED
    assert list(timed_out.events.order_by("at").values_list("to_state", flat=True)) == [
        "intent", "unknown", "committed"]
    # an ambiguous refund reconciliation could not settle, in triage
    triaged = LedgerEntry.objects.get(task_id__endswith="-triage")
    assert [e.pk for e in triage_queue()] == [triaged.pk]
    # a large refund waiting for an operator
    assert Approval.objects.get(status=ApprovalStatus.PENDING).entry.task_id.endswith("-approval")
    # a refused loop
    loop = Invocation.objects.filter(task_id__endswith="-loop").order_by("created_at")
    assert [row.kind for row in loop][-1] == "loop_detected"
    # capability requests, counted
    requests = {(r.name, r.reason): r.count for r in CapabilityRequest.objects.all()}
    assert requests == {
        ("issue_voucher", CapabilityReason.UNKNOWN): 1,
        ("refund_payment", CapabilityReason.NOT_IN_PHASE): 1,
        ("export_order_csv", CapabilityReason.UNKNOWN): 1,
    }
    # and no fault is left armed
    assert not PaymentsFault.objects.filter(used_at__isnull=True).exists()
    assert "/admin/ledger/triageentry/" in output


def test_a_second_run_adds_to_the_first(demo, live_server, celery_worker):
    run_scenarios(live_server.url)

    run_scenarios(live_server.url)

    assert triage_queue().count() == 2
    assert Approval.objects.filter(status=ApprovalStatus.PENDING).count() == 2
    assert LedgerEntry.objects.filter(task_id__endswith="-timeout", state=LedgerState.COMMITTED).count() == 2
    assert CapabilityRequest.objects.get(name="issue_voucher").count == 2
