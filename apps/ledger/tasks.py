"""Beat jobs of the ledger. Thin: each re-reads state and calls one service."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from .models import LedgerEntry
from .reconciliation import entries_due_for_reconciliation, ledger_reconcile_entry, ledger_sweep

# Seconds a due entry is held back once its reconciliation is enqueued, so the next beat
# does not enqueue it again while the first task is still waiting in the queue.
_RECONCILE_LEASE_S = 120


@shared_task(name="ledger.sweep", acks_late=True, ignore_result=True, soft_time_limit=100, time_limit=120)
def ledger_sweep_task() -> dict[str, int]:
    from apps.gateway.tasks import execute_entry_task

    report = ledger_sweep()
    for entry_id in report.to_enqueue:
        execute_entry_task.delay(str(entry_id))
    return {
        "marked_unknown": len(report.marked_unknown),
        "enqueued": len(report.to_enqueue),
        "approvals_expired": len(report.approvals_expired),
    }


@shared_task(
    name="ledger.reconcile_due", acks_late=True, ignore_result=True, soft_time_limit=50, time_limit=60
)
def ledger_reconcile_due_task() -> int:
    due = entries_due_for_reconciliation()
    if due:
        LedgerEntry.objects.filter(pk__in=due).update(
            next_check_at=timezone.now() + timedelta(seconds=_RECONCILE_LEASE_S)
        )
    for entry_id in due:
        ledger_reconcile_entry_task.delay(str(entry_id))
    return len(due)


@shared_task(
    name="ledger.reconcile_entry",
    acks_late=True,
    ignore_result=True,
    soft_time_limit=100,
    time_limit=120,
)
def ledger_reconcile_entry_task(entry_id: str) -> str:
    return ledger_reconcile_entry(entry_id=entry_id)
