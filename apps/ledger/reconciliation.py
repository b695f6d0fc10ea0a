"""Finding out what really happened to uncertain executions.

The sweeper turns executions that outlived their timeout into `unknown` and re-enqueues
async ones no worker ever claimed; the reconciler asks each `unknown` entry's executor
hook, with backoff, and hands what it cannot settle to the triage queue.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.common.errors import ForbiddenError, UpstreamError
from apps.gateway.executors import reconcile
from apps.gateway.executors.base import ExecutionRequest, ReconcileAnswer

from .models import Approval, ApprovalStatus, LedgerEntry, LedgerState, ReconcileAttempt
from .services import ledger_fail_intent, ledger_mark_unknown, reconcile_backoff_s
from .states import TransitionRefused, transition

logger = logging.getLogger("toolhub.ledger")

SWEEPER = "sweeper"
RECONCILER = "reconciler"
# An async entry not claimed this long after it was recorded was never enqueued (a crash
# between commit and enqueue) or its message was lost: enqueue it again.
UNCLAIMED_AFTER_S = 30
_BATCH = 500


def execution_request_for(entry: LedgerEntry) -> ExecutionRequest:
    """What the executor is (or was) asked, rebuilt from the ledger row alone."""
    version = entry.version
    return ExecutionRequest(
        tenant_slug=entry.tenant.slug,
        task_id=entry.task_id,
        call_id=entry.call_id,
        tool_name=entry.tool.name,
        version_number=version.number,
        arguments=entry.arguments,
        timeout_s=version.timeout_s,
        config=version.executor_config,
        subject=entry.subject,
        idempotency_key=entry.key,
        platform_owned=entry.tool.tenant_id is None,
    )


@dataclass
class SweepReport:
    marked_unknown: list[Any] = field(default_factory=list)
    to_enqueue: list[Any] = field(default_factory=list)
    approvals_expired: list[Any] = field(default_factory=list)


def ledger_sweep(*, now: datetime | None = None) -> SweepReport:
    """One pass of the sweeper. Returns what it changed and which entries to enqueue again."""
    now = now or timezone.now()
    report = SweepReport()
    grace = timedelta(seconds=settings.TOOLHUB_SWEEP_GRACE_S)
    stale = (
        LedgerEntry.objects.filter(state=LedgerState.INTENT, claimed_at__lt=now - grace)
        .select_related("version")
        .order_by("claimed_at")[:_BATCH]
    )
    for entry in stale:
        if entry.claimed_at + timedelta(
            seconds=entry.version.timeout_s
        ) + grace < now and ledger_mark_unknown(
            entry_id=entry.pk,
            actor=SWEEPER,
            note=f"still executing {settings.TOOLHUB_SWEEP_GRACE_S:g} s after its "
            f"{entry.version.timeout_s:g} s timeout (crashed or lost worker?): outcome unknown",
        ):
            report.marked_unknown.append(entry.pk)
    report.to_enqueue = list(
        LedgerEntry.objects.filter(
            state=LedgerState.INTENT,
            run_async=True,
            claimed_at__isnull=True,
            created_at__lt=now - timedelta(seconds=UNCLAIMED_AFTER_S),
        )
        .exclude(
            approval__status__in=[ApprovalStatus.PENDING, ApprovalStatus.REJECTED, ApprovalStatus.EXPIRED]
        )
        .order_by("created_at")
        .values_list("pk", flat=True)[:_BATCH]
    )
    for approval in Approval.objects.filter(status=ApprovalStatus.PENDING, expires_at__lt=now).select_related(
        "entry__tool"
    )[:_BATCH]:
        if approval_expire(approval=approval, now=now):
            report.approvals_expired.append(approval.entry_id)
    return report


def approval_expire(*, approval: Approval, now: datetime) -> bool:
    """Close a pending approval nobody decided in time; its call is refused."""
    with transaction.atomic():
        if not Approval.objects.filter(pk=approval.pk, status=ApprovalStatus.PENDING).update(
            status=ApprovalStatus.EXPIRED, decided_at=now, decided_by=SWEEPER
        ):
            return False
        error = ForbiddenError(
            "Nobody approved this call in time, so it was not run.",
            hint="Tell the user the action needs an operator's approval and was not done; ask them "
            "whether to request it again.",
        ).as_envelope(call_id=approval.entry.call_id, tool=approval.entry.tool.name)
        ledger_fail_intent(entry_id=approval.entry_id, actor=SWEEPER, error=error, note="approval expired")
    return True


def entries_due_for_reconciliation(*, now: datetime | None = None) -> list[Any]:
    now = now or timezone.now()
    return list(
        LedgerEntry.objects.filter(
            state=LedgerState.UNKNOWN, triage_since__isnull=True, next_check_at__lte=now
        )
        .order_by("next_check_at")
        .values_list("pk", flat=True)[:_BATCH]
    )


def ledger_reconcile_entry(*, entry_id: Any, actor: str = RECONCILER) -> str:
    """Ask the executor's reconcile hook about one unknown entry and act on the answer.

    Found → committed with the real result; certainly absent → failed; unclear → try again
    after the next backoff step, or put it in the triage queue after the last.
    Returns the entry's state afterwards. Safe to run twice: a settled entry is left alone.
    """
    entry = LedgerEntry.objects.select_related("version", "tool", "tenant").get(pk=entry_id)
    if entry.state != LedgerState.UNKNOWN:
        return entry.state
    try:
        answer = reconcile(entry.version.executor, execution_request_for(entry))
    except Exception as exc:  # noqa: BLE001 - a broken hook is an unclear answer, not a crash
        logger.exception("reconcile hook of %s failed", entry.tool.name)
        answer = ReconcileAnswer(found=None, note=f"the reconcile hook failed: {type(exc).__name__}")
    ReconcileAttempt.objects.create(
        entry=entry,
        actor=actor,
        note=answer.note[:2000],
        answer={True: "found", False: "absent", None: "unclear"}[answer.found],
    )
    try:
        if answer.found is True:
            transition(
                entry_id=entry.pk,
                from_state=LedgerState.UNKNOWN,
                to_state=LedgerState.COMMITTED,
                actor=actor,
                note=answer.note,
                result=answer.result,
                next_check_at=None,
                triage_since=None,
            )
            return LedgerState.COMMITTED
        if answer.found is False:
            error = UpstreamError(
                f"{entry.tool.name} was checked with the external system: the call was not applied.",
                hint="Nothing happened. If the user still wants it, make the call again with a new call id.",
            ).as_envelope(call_id=entry.call_id, tool=entry.tool.name)
            transition(
                entry_id=entry.pk,
                from_state=LedgerState.UNKNOWN,
                to_state=LedgerState.FAILED,
                actor=actor,
                note=answer.note,
                error=error,
                next_check_at=None,
                triage_since=None,
            )
            return LedgerState.FAILED
    except TransitionRefused:
        entry.refresh_from_db()
        return entry.state
    _schedule_next_check(entry, give_up=not answer.retry)
    return LedgerState.UNKNOWN


def _schedule_next_check(entry: LedgerEntry, *, give_up: bool) -> None:
    backoff = reconcile_backoff_s()
    attempts = entry.attempts + 1
    now = timezone.now()
    if give_up or attempts >= len(backoff):
        fields: dict[str, Any] = {"attempts": attempts, "next_check_at": None, "triage_since": now}
    else:
        fields = {"attempts": attempts, "next_check_at": now + timedelta(seconds=backoff[attempts])}
    LedgerEntry.objects.filter(pk=entry.pk, state=LedgerState.UNKNOWN).update(updated_at=now, **fields)
