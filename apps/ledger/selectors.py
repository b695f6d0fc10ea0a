"""Reads of the ledger. Those for agents take the tenant; the operators' queues span tenants
and are narrowed to a staff user's tenant by the admin."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet

from apps.audit.models import Invocation
from apps.common.executor_kinds import CODE_RUN_KIND

from .models import Approval, ApprovalStatus, CodeRun, LedgerEntry, LedgerState

# The most inner calls a run's page lists: a run may make 100 (the sandbox's max_calls).
INNER_CALLS_SHOWN = 200
# Inner calls are logged by the worker that ran the code, the run's entry by the request that
# recorded it, each with its own clock: the inner calls are looked for from a little before.
CLOCK_SKEW = timedelta(minutes=5)


def ledger_entry_for_call(*, tenant_id: int, task_id: str, call_id: str) -> LedgerEntry | None:
    """The entry recorded for this call id of this task, if any.

    Written as SQL because this lookup is most of the work of a replay: building the query
    through the ORM doubled its cost (docs/performance.md).
    """
    entries = LedgerEntry.objects.raw(
        "SELECT * FROM ledger_ledgerentry WHERE tenant_id = %s AND task_id = %s AND call_id = %s",
        [tenant_id, task_id, call_id],
    )
    return next(iter(entries), None)


def ledger_entry_get(*, tenant_id: int, pk: Any) -> LedgerEntry | None:
    """One entry of this tenant, or None (another tenant's entry looks like a missing one)."""
    return LedgerEntry.objects.for_tenant(tenant_id).select_related("tool", "version").filter(pk=pk).first()


def ledger_entries_run_async(
    *, tenant_id: int, agent_id: int, before: tuple[datetime, Any] | None = None, limit: int = 50
) -> list[LedgerEntry]:
    """This agent's entries that a worker runs (accepted or approval-gated calls), newest first;
    `before` (an entry's created_at and id) pages on from that entry."""
    entries = LedgerEntry.objects.for_tenant(tenant_id).filter(agent_id=agent_id, run_async=True)
    if before is not None:
        at, pk = before
        entries = entries.filter(Q(created_at__lt=at) | Q(created_at=at, pk__lt=pk))
    # What each entry's envelope reads (entry_outcome): its version's tool and its approval.
    related = entries.select_related("tool", "version__tool", "approval")
    return list(related.order_by("-created_at", "-pk")[:limit])


def triage_queue() -> QuerySet[LedgerEntry]:
    """Unknown entries reconciliation gave up on, oldest in the queue first (all tenants)."""
    return LedgerEntry.objects.filter(state=LedgerState.UNKNOWN, triage_since__isnull=False).order_by(
        "triage_since"
    )


def approvals_pending() -> QuerySet[Approval]:
    """Approvals still waiting for a decision (all tenants), the soonest to expire first."""
    return Approval.objects.filter(status=ApprovalStatus.PENDING).order_by("expires_at")


def ledger_entry_to_run(*, pk: Any) -> LedgerEntry | None:
    """An entry with its version, tool and tenant, to execute or reconcile it (any tenant:
    workers and operators act on the ledger as a whole)."""
    return LedgerEntry.objects.select_related("version__tool", "tenant", "tool").filter(pk=pk).first()


def approval_status_of(*, entry_id: Any) -> str | None:
    """The status of the approval gating this entry; None when the entry needs none."""
    status: str | None = Approval.objects.filter(entry_id=entry_id).values_list("status", flat=True).first()
    return status


def approval_is_pending(*, entry: LedgerEntry) -> bool:
    """The entry waits for an operator's decision. Reads the entry's approval as loaded with it
    (`select_related("approval")`, as lists of entries do), else with one query."""
    try:
        return entry.approval.status == ApprovalStatus.PENDING
    except Approval.DoesNotExist:
        return False


def code_runs() -> QuerySet[CodeRun]:
    """Entries of code runs (run_python calls, versions of the sandbox executor), all tenants,
    newest first."""
    return CodeRun.objects.filter(version__executor=CODE_RUN_KIND).order_by("-created_at")


@dataclass(frozen=True)
class CodeRunCalls:
    """What a run's code called: the logged inner calls (at most INNER_CALLS_SHOWN, oldest
    first; older than the log's retention, none) and the inner writes' ledger entries."""

    invocations: list[Invocation]
    more: bool
    inner_entries: list[LedgerEntry]


def code_run_calls(*, run: LedgerEntry) -> CodeRunCalls:
    """The inner calls and inner writes of `run`, in two queries. The invocation log is
    partitioned by time: the lower bound on `created_at` keeps the read to the run's partitions."""
    logged = Invocation.objects.filter(
        tenant_id=run.tenant_id, parent_execution_id=run.pk, created_at__gte=run.created_at - CLOCK_SKEW
    ).order_by("created_at", "id")
    invocations = list(logged[: INNER_CALLS_SHOWN + 1])
    writes = run.inner_entries.select_related("tool", "version").order_by("created_at", "pk")
    entries = list(writes[: INNER_CALLS_SHOWN + 1])
    return CodeRunCalls(
        invocations=invocations[:INNER_CALLS_SHOWN],
        more=len(invocations) > INNER_CALLS_SHOWN or len(entries) > INNER_CALLS_SHOWN,
        inner_entries=entries[:INNER_CALLS_SHOWN],
    )
