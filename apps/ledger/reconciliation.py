"""Recording what is found out about uncertain executions.

The sweeper turns executions that outlived their timeout into `unknown` and names the async
ones no worker ever claimed; the gateway enqueues those again, asks each due `unknown`
entry's executor hook, and hands the answer here: recorded with backoff, and what cannot be
settled goes to the triage queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.common.errors import ForbiddenError, UpstreamError

from .models import Approval, ApprovalStatus, LedgerEntry, LedgerState, ReconcileAttempt
from .services import ledger_fail_intent, ledger_mark_unknown, reconcile_backoff_s
from .states import TransitionRefused, transition

SWEEPER = "sweeper"
RECONCILER = "reconciler"
# An async entry not claimed this long after it was recorded was never enqueued (a crash
# between commit and enqueue) or its message was lost: enqueue it again.
UNCLAIMED_AFTER_S = 30
_BATCH = 500


@dataclass
class SweepReport:
    marked_unknown: list[Any] = field(default_factory=list)
    # Async intents no worker claimed: whoever runs the sweep enqueues them again.
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
        if entry.claimed_at is None:
            raise ValueError(f"Ledger entry {entry.pk} was selected by its claimed_at but has none.")
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


def ledger_hold_due_checks(*, entry_ids: Sequence[Any], for_s: float) -> None:
    """Hold due entries back `for_s` seconds once their reconciliation is enqueued, so the next
    beat does not enqueue them again while the first task still waits in the queue."""
    if entry_ids:
        held_until = timezone.now() + timedelta(seconds=for_s)
        LedgerEntry.objects.filter(pk__in=entry_ids).update(next_check_at=held_until)


def ledger_record_reconcile_answer(
    *,
    entry: LedgerEntry,
    actor: str,
    found: bool | None,
    result: Any = None,
    note: str = "",
    retry: bool = True,
) -> str:
    """Record what an unknown entry's reconcile hook answered, and act on it.

    Found → committed with the real result; certainly absent → failed; unclear → try again
    after the next backoff step, or put it in the triage queue after the last (at once when
    `retry` is False: asking again cannot help). Writes a ReconcileAttempt and, when the
    answer is definite, the transition. Returns the entry's state afterwards; an entry
    settled meanwhile is left alone.
    """
    ReconcileAttempt.objects.create(
        entry=entry,
        actor=actor,
        note=note[:2000],
        answer={True: "found", False: "absent", None: "unclear"}[found],
    )
    # Every attempt counts, the one that settles the entry too: the count and the attempts
    # listed on its page agree.
    LedgerEntry.objects.filter(pk=entry.pk).update(attempts=F("attempts") + 1)
    entry.attempts += 1
    try:
        if found is True:
            transition(
                entry_id=entry.pk,
                from_state=LedgerState.UNKNOWN,
                to_state=LedgerState.COMMITTED,
                actor=actor,
                note=note,
                result=result,
                next_check_at=None,
                triage_since=None,
            )
            return LedgerState.COMMITTED
        if found is False:
            error = UpstreamError(
                f"{entry.tool.name} was checked with the external system: the call was not applied.",
                hint="Nothing happened. If the user still wants it, make the call again with a new call id.",
            ).as_envelope(call_id=entry.call_id, tool=entry.tool.name)
            transition(
                entry_id=entry.pk,
                from_state=LedgerState.UNKNOWN,
                to_state=LedgerState.FAILED,
                actor=actor,
                note=note,
                error=error,
                next_check_at=None,
                triage_since=None,
            )
            return LedgerState.FAILED
    except TransitionRefused:
        entry.refresh_from_db()
        return str(entry.state)
    _schedule_next_check(entry, give_up=not retry)
    return LedgerState.UNKNOWN


def _schedule_next_check(entry: LedgerEntry, *, give_up: bool) -> None:
    backoff = reconcile_backoff_s()
    attempts = entry.attempts  # this one included
    now = timezone.now()
    if give_up or attempts >= len(backoff):
        fields: dict[str, Any] = {"next_check_at": None, "triage_since": now}
    else:
        fields = {"next_check_at": now + timedelta(seconds=backoff[attempts])}
    LedgerEntry.objects.filter(pk=entry.pk, state=LedgerState.UNKNOWN).update(updated_at=now, **fields)
