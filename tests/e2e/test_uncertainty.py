"""Uncertainty handled for real: a Celery worker, the payments upstream, reconciliation.

These tests run a real worker process on the real broker (no eager mode) and drive the
beat jobs by enqueueing them, as beat would.
"""

from __future__ import annotations

import os
import signal
import subprocess
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from apps.catalog.models import ToolVersion
from apps.demo_shop.models import DemoOrder, DemoRefund
from apps.demo_shop.services import set_status_endpoint_down
from apps.gateway.tasks import ledger_reconcile_due_task, ledger_sweep_task
from apps.ledger.approvals import ApprovalRefused, approval_decide
from apps.ledger.models import Approval, LedgerEntry, LedgerState
from apps.ledger.reconciliation import ledger_sweep
from apps.ledger.services import IntentSpec, ledger_open_intent
from apps.tenancy.models import Agent, Tenant
from tests.e2e.conftest import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _worker_idle_afterwards(request):
    """Leave no task running into the next test: its database flush would deadlock with it."""
    yield
    if "celery_worker" not in request.fixturenames:
        return
    from toolhub.celery import app

    app.control.purge()
    inspect = app.control.inspect(timeout=1)
    wait_for(
        lambda: not any((inspect.active() or {}).values()) and not any((inspect.reserved() or {}).values()),
        timeout_s=30,
        what="the worker to finish its tasks",
    )


def an_order(user_id: str = "u-1001") -> DemoOrder:
    return DemoOrder.objects.filter(user_id=user_id, status="paid").order_by("order_id").first()


def state_of(entry_id: str) -> str:
    return LedgerEntry.objects.get(pk=entry_id).state


def settled(entry_id: str) -> bool:
    return state_of(entry_id) in (LedgerState.COMMITTED, LedgerState.FAILED)


def reconcile_until_settled(entry_id: str) -> str:
    """Run the beat jobs, as beat would, until the entry is committed or failed."""

    def tick() -> bool:
        ledger_sweep_task.delay()
        ledger_reconcile_due_task.delay()
        return settled(entry_id)

    wait_for(tick, timeout_s=30, what=f"entry {entry_id} to be settled")
    return state_of(entry_id)


# A task id in another script makes a key that is percent-encoded on the wire (HTTP headers
# are ASCII): the status lookup must ask with the same form the refund was sent with.
@pytest.mark.parametrize("task_id", ["t-1", "tâche-1"])
def test_a_refund_slower_than_its_timeout_is_committed_by_reconciliation(
    demo, republish_refund, celery_worker, task_id
):
    republish_refund(path="/refunds?delay_ms=1500", timeout_s=1)
    arguments = {"order_id": an_order().order_id, "amount_cents": 300}

    accepted = demo.invoke("refund_payment", arguments, wait_s=0.2, task_id=task_id)
    entry_id = accepted["execution_id"]
    wait_for(lambda: state_of(entry_id) != LedgerState.INTENT, what="the worker to run the refund")

    assert accepted["status"] == "accepted" and accepted["poll"] == f"/api/v1/executions/{entry_id}"
    assert state_of(entry_id) == LedgerState.UNKNOWN
    assert reconcile_until_settled(entry_id) == LedgerState.COMMITTED
    refund = DemoRefund.objects.get()
    polled = demo.http.get(f"/api/v1/executions/{entry_id}").json()
    replay = demo.invoke("refund_payment", arguments, task_id=task_id)
    assert polled["status"] == "ok" and polled["data"]["refund_id"] == refund.refund_id
    assert (
        replay["status"] == "ok"
        and replay["cached"] is True
        and replay["data"]["refund_id"] == refund.refund_id
    )


def test_an_ambiguous_failure_waits_in_triage_until_an_operator_settles_it(
    demo, republish_refund, celery_worker, client
):
    republish_refund(path="/refunds?fail=after")
    set_status_endpoint_down(True)
    arguments = {"order_id": an_order().order_id, "amount_cents": 300}

    body = demo.invoke("refund_payment", arguments)
    entry_id = body["execution_id"]
    for attempt in range(1, 4):  # the test settings give reconciliation three attempts
        ledger_reconcile_due_task.delay()
        wait_for(
            lambda attempt=attempt: LedgerEntry.objects.get(pk=entry_id).attempts >= attempt,
            what=f"reconciliation attempt {attempt}",
        )

    entry = LedgerEntry.objects.get(pk=entry_id)
    assert body["kind"] == "upstream_error" and entry.state == LedgerState.UNKNOWN
    assert entry.triage_since is not None
    assert [a.answer for a in entry.reconcile_attempts.all()] == ["unclear"] * 3
    assert demo.invoke("refund_payment", arguments)["kind"] == "outcome_unknown"

    # An operator checks the provider and settles it through the triage page.
    refund = DemoRefund.objects.get()
    client.force_login(get_user_model().objects.get(username="admin"))
    client.post(
        reverse("admin:ledger_triageentry_button", args=[entry_id, "settle-committed"]),
        {
            "note": "Refund found in the provider's dashboard.",
            "result": f'{{"refund_id": "{refund.refund_id}"}}',
        },
    )

    replay = demo.invoke("refund_payment", arguments)
    assert replay["status"] == "ok" and replay["cached"] is True
    assert replay["data"] == {"refund_id": refund.refund_id}


def worker_children(worker: subprocess.Popen) -> list[int]:
    output = subprocess.run(["pgrep", "-P", str(worker.pid)], capture_output=True, text=True).stdout
    return [int(pid) for pid in output.split()]


def test_a_worker_killed_mid_task_loses_nothing_and_refunds_once(demo, republish_refund, celery_worker):
    republish_refund(path="/refunds?delay_ms=2000", timeout_s=3, mode="async")
    arguments = {"order_id": an_order().order_id, "amount_cents": 300}

    entry_id = demo.invoke("refund_payment", arguments)["execution_id"]
    wait_for(lambda: DemoRefund.objects.exists(), what="the refund to reach the upstream")
    for pid in worker_children(celery_worker):
        os.kill(pid, signal.SIGKILL)

    assert reconcile_until_settled(entry_id) == LedgerState.COMMITTED
    assert DemoRefund.objects.count() == 1
    assert LedgerEntry.objects.get(pk=entry_id).result["refund_id"] == DemoRefund.objects.get().refund_id
    assert celery_worker.poll() is None, "the worker's main process replaces its killed children"


def test_an_intent_never_enqueued_is_swept_and_executed(demo, celery_worker):
    version = ToolVersion.objects.get(tool__name="refund_payment", status="published")
    opened = ledger_open_intent(
        spec=IntentSpec(
            tenant_id=Tenant.objects.get(slug="demo").pk,
            agent_id=Agent.objects.get(name="support-bot").pk,
            key="demo/t-crash/c1/refund_payment/x",
            task_id="t-crash",
            call_id="c1",
            tool_id=version.tool_id,
            version_id=version.pk,
            subject="u-1001",
            args_hash="x",
            arguments={"order_id": an_order().order_id, "amount_cents": 200, "user_id": "u-1001"},
            run_async=True,
        ),
        actor="test: the web process died between commit and enqueue",
    )
    entry_id = str(opened.entry.pk)
    LedgerEntry.objects.filter(pk=entry_id).update(created_at=timezone.now() - timedelta(minutes=5))

    assert reconcile_until_settled(entry_id) == LedgerState.COMMITTED
    assert DemoRefund.objects.get().idempotency_key == "demo/t-crash/c1/refund_payment/x"


def test_an_approved_refund_runs_once_approved(demo, republish_refund, celery_worker):
    republish_refund(approval={"field": "amount_cents", "above": 1000})
    arguments = {"order_id": an_order().order_id, "amount_cents": 1500}

    pending = demo.invoke("refund_payment", arguments)
    entry_id = pending["execution_id"]
    assert pending["status"] == "pending_approval" and not DemoRefund.objects.exists()
    assert demo.invoke("refund_payment", arguments)["status"] == "pending_approval"
    assert demo.http.get(f"/api/v1/executions/{entry_id}").json()["status"] == "pending_approval"

    approval_decide(approval=Approval.objects.get(), approve=True, actor="ops:ana", note="customer verified")

    wait_for(lambda: settled(entry_id), what="the approved refund to run")
    assert state_of(entry_id) == LedgerState.COMMITTED and DemoRefund.objects.count() == 1
    assert demo.http.get(f"/api/v1/executions/{entry_id}").json()["status"] == "ok"


def test_a_rejected_or_expired_approval_refuses_the_call_with_the_reason(demo, republish_refund):
    republish_refund(approval={"always": True})
    rejected = demo.invoke(
        "refund_payment", {"order_id": an_order().order_id, "amount_cents": 10}, call_id="a"
    )
    expired = demo.invoke(
        "refund_payment", {"order_id": an_order().order_id, "amount_cents": 20}, call_id="b"
    )

    approval_decide(
        approval=Approval.objects.get(entry_id=rejected["execution_id"]),
        approve=False,
        actor="ops:bob",
        note="Refunds over the phone only.",
    )
    Approval.objects.filter(entry_id=expired["execution_id"]).update(expires_at=timezone.now())
    ledger_sweep()

    assert rejected["status"] == expired["status"] == "pending_approval"
    after_reject = demo.invoke(
        "refund_payment", {"order_id": an_order().order_id, "amount_cents": 10}, call_id="a"
    )
    after_expiry = demo.invoke(
        "refund_payment", {"order_id": an_order().order_id, "amount_cents": 20}, call_id="b"
    )
    assert after_reject["kind"] == "forbidden" and "Refunds over the phone only." in after_reject["hint"]
    assert after_expiry["kind"] == "forbidden" and "approved" in after_expiry["message"]
    assert not DemoRefund.objects.exists()


def test_approving_a_call_whose_arguments_changed_is_impossible(demo, republish_refund):
    republish_refund(approval={"always": True})
    pending = demo.invoke("refund_payment", {"order_id": an_order().order_id, "amount_cents": 10})
    LedgerEntry.objects.filter(pk=pending["execution_id"]).update(
        arguments={"order_id": an_order().order_id, "amount_cents": 99999, "user_id": "u-1001"}
    )

    with pytest.raises(ApprovalRefused):
        approval_decide(approval=Approval.objects.get(), approve=True, actor="ops:ana", note="looks fine")

    assert (
        Approval.objects.get().status == "pending" and state_of(pending["execution_id"]) == LedgerState.INTENT
    )
