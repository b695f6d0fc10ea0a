"""Celery tasks that execute: ledger entries, and the beat jobs that find out what became of
uncertain ones. Thin: ids in, re-read state, one service call.

The beat jobs keep their `ledger.*` names (names never change: apps/common/tasks.TaskName):
they act on the ledger, but only the gateway may run executors, so they live here.
"""

from __future__ import annotations

from apps.common.tasks import TaskName, toolhub_task
from apps.ledger.reconciliation import entries_due_for_reconciliation, ledger_hold_due_checks, ledger_sweep

from .execution import execute_async_entry
from .reconciliation import ledger_reconcile_entry

# Seconds a due entry is held back once its reconciliation is enqueued, so the next beat
# does not enqueue it again while the first task is still waiting in the queue.
_RECONCILE_LEASE_S = 120


# The hard limit stays above the longest tool timeout (ToolVersion.timeout_s ≤ 600 s), so an
# executor always answers (or times out) before Celery kills the task.
@toolhub_task(
    name=TaskName.GATEWAY_EXECUTE_ENTRY, time_limit=660, soft_time_limit=630, reject_on_worker_lost=True
)
def execute_entry_task(entry_id: str) -> None:
    execute_async_entry(entry_id=entry_id)


def enqueue_entry(entry_id: str) -> None:
    """Hand an `intent` entry to the workers (raises kombu's OperationalError when the broker
    is unreachable)."""
    execute_entry_task.delay(entry_id)


@toolhub_task(name=TaskName.LEDGER_SWEEP, time_limit=120)
def ledger_sweep_task() -> dict[str, int]:
    report = ledger_sweep()
    for entry_id in report.to_enqueue:
        enqueue_entry(str(entry_id))
    return {
        "marked_unknown": len(report.marked_unknown),
        "enqueued": len(report.to_enqueue),
        "approvals_expired": len(report.approvals_expired),
    }


@toolhub_task(name=TaskName.LEDGER_RECONCILE_DUE, time_limit=60)
def ledger_reconcile_due_task() -> int:
    due = entries_due_for_reconciliation()
    ledger_hold_due_checks(entry_ids=due, for_s=_RECONCILE_LEASE_S)
    for entry_id in due:
        ledger_reconcile_entry_task.delay(str(entry_id))
    return len(due)


@toolhub_task(name=TaskName.LEDGER_RECONCILE_ENTRY, time_limit=120)
def ledger_reconcile_entry_task(entry_id: str) -> str:
    return ledger_reconcile_entry(entry_id=entry_id)
