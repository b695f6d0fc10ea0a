"""Writes of the ledger: open an intent, claim it, record its outcome, settle it.

The intent row is committed in its own short transaction *before* any executor runs, so a
crash after it leaves a row that says "this may have happened" (see the sweeper).
Idempotency rests on the unique constraints of LedgerEntry, not on a prior SELECT.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from apps.audit.services import audit_record
from apps.common.db import insert_together
from apps.common.errors import UpstreamError

from .models import Approval, LedgerEntry, LedgerEvent, LedgerState
from .states import FINAL_STATES, TransitionRefused, transition

logger = logging.getLogger("toolhub.ledger")


@dataclass(frozen=True)
class IntentSpec:
    tenant_id: int
    agent_id: int
    key: str
    task_id: str
    call_id: str
    tool_id: int
    version_id: int
    subject: str
    args_hash: str
    arguments: dict[str, Any]
    # Executed later by a Celery task (async mode, a short wait_s, or awaiting approval);
    # otherwise the request that records it executes it at once, so it is claimed now.
    run_async: bool = False
    approval: ApprovalSpec | None = None
    # The entry of the code run that made this call (run_python's inner calls).
    parent_id: Any = None
    # What a worker that runs the call later needs besides its arguments (LedgerEntry.context).
    context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ApprovalSpec:
    """An approval to open together with the intent: never one without the other."""

    reason: str
    expires_s: int


@dataclass(frozen=True)
class OpenedIntent:
    entry: LedgerEntry
    created: bool  # False: the call id was already used in this task (a replay or a conflict)


def ledger_open_intent(*, spec: IntentSpec, actor: str) -> OpenedIntent:
    """Record the intent of a side effect, or return the entry already recorded for this call.

    Writes a LedgerEntry in state `intent`, its first event and, when the call needs one,
    its pending Approval, all or none, committed before returning (an intent never exists
    without the approval that gates it); on PostgreSQL in one statement. Concurrent
    duplicates race on the unique constraints; the losers get the winner's row.
    """
    entry = LedgerEntry(
        tenant_id=spec.tenant_id,
        agent_id=spec.agent_id,
        key=spec.key,
        task_id=spec.task_id,
        call_id=spec.call_id,
        tool_id=spec.tool_id,
        version_id=spec.version_id,
        subject=spec.subject,
        args_hash=spec.args_hash,
        arguments=spec.arguments,
        state=LedgerState.INTENT,
        run_async=spec.run_async,
        parent_id=spec.parent_id,
        context=spec.context,
        claimed_at=None if spec.run_async else timezone.now(),
    )
    rows: list[models.Model] = [
        entry,
        LedgerEvent(
            entry=entry,
            from_state="",
            to_state=LedgerState.INTENT,
            actor=actor,
            note=spec.approval.reason if spec.approval else "",
        ),
    ]
    if spec.approval:
        rows.append(
            Approval(
                entry=entry,
                tenant_id=spec.tenant_id,
                version_id=spec.version_id,
                args_hash=spec.args_hash,
                reason=spec.approval.reason,
                expires_at=timezone.now() + timedelta(seconds=spec.approval.expires_s),
            )
        )
    try:
        insert_together(*rows)
    except IntegrityError:
        existing = LedgerEntry.objects.get(
            tenant_id=spec.tenant_id, task_id=spec.task_id, call_id=spec.call_id
        )
        return OpenedIntent(entry=existing, created=False)
    return OpenedIntent(entry=entry, created=True)


def ledger_record_outcome(
    *,
    entry: LedgerEntry,
    to_state: str,
    actor: str,
    result: Any = None,
    error: dict[str, Any] | None = None,
    note: str = "",
) -> None:
    """Record what an execution of this entry ended in.

    Usually moves `intent` on. When the sweeper already declared the entry `unknown` (the
    executor outlived its timeout), a definite answer still settles it: the executor knows
    better than any reconciliation could.
    """
    fields: dict[str, Any] = {"result": result, "error": error}
    if to_state == LedgerState.UNKNOWN:
        fields["next_check_at"] = timezone.now() + timedelta(seconds=reconcile_backoff_s()[0])
    try:
        transition(
            entry_id=entry.pk,
            from_state=LedgerState.INTENT,
            to_state=to_state,
            actor=actor,
            note=note,
            **fields,
        )
    except TransitionRefused:
        if to_state not in FINAL_STATES:
            return
        try:
            transition(
                entry_id=entry.pk,
                from_state=LedgerState.UNKNOWN,
                to_state=to_state,
                actor=actor,
                note=note or "the executor answered after the entry was marked unknown",
                triage_since=None,
                next_check_at=None,
                **fields,
            )
        except TransitionRefused:
            logger.warning("entry %s was settled before its executor answered %s", entry.pk, to_state)


def reconcile_backoff_s() -> list[float]:
    """Seconds to wait before each reconciliation attempt; after the last, triage."""
    return list(settings.TOOLHUB_RECONCILE_BACKOFF_S)


def ledger_claim(*, entry_id: Any) -> bool:
    """Mark an async entry as started; False when another execution claimed it first."""
    return bool(
        LedgerEntry.objects.filter(pk=entry_id, state=LedgerState.INTENT, claimed_at__isnull=True).update(
            claimed_at=timezone.now()
        )
    )


def _move_intent(*, entry_id: Any, to_state: str, actor: str, note: str, **fields: Any) -> bool:
    """Move an `intent` entry on; False when it is no longer `intent`."""
    try:
        transition(
            entry_id=entry_id,
            from_state=LedgerState.INTENT,
            to_state=to_state,
            actor=actor,
            note=note,
            **fields,
        )
    except TransitionRefused:
        return False
    return True


def ledger_mark_unknown(*, entry_id: Any, actor: str, note: str) -> bool:
    """Declare an `intent` entry's outcome unknown and schedule its reconciliation now."""
    return _move_intent(
        entry_id=entry_id, to_state=LedgerState.UNKNOWN, actor=actor, note=note, next_check_at=timezone.now()
    )


def ledger_fail_intent(*, entry_id: Any, actor: str, error: dict[str, Any], note: str) -> bool:
    """Refuse an `intent` entry that never ran (rejected, expired, or not enqueued)."""
    return _move_intent(entry_id=entry_id, to_state=LedgerState.FAILED, actor=actor, note=note, error=error)


def ledger_settle(
    *, entry: LedgerEntry, outcome: str, actor: str, note: str, result: Any = None
) -> LedgerEntry:
    """An operator settles an unknown entry as committed (with the result) or failed.

    Writes the transition, its event and an audit event in one transaction. Raises
    ValidationError without a note or for another outcome, TransitionRefused when the entry
    is no longer unknown (someone settled it first).
    """
    if not note.strip():
        raise ValidationError("Say why: a note is required to settle an entry.")
    if outcome not in FINAL_STATES:
        raise ValidationError(f"An entry can only be settled as committed or failed, not {outcome}.")
    error = None
    if outcome == LedgerState.FAILED:
        error = UpstreamError(
            "An operator checked this call: it was not applied.",
            hint=f"Nothing happened. Operator's note: {note.strip()}",
        ).as_envelope(call_id=entry.call_id, tool=entry.tool.name)
    with transaction.atomic():
        transition(
            entry_id=entry.pk,
            from_state=LedgerState.UNKNOWN,
            to_state=outcome,
            actor=actor,
            note=note,
            result=result if outcome == LedgerState.COMMITTED else None,
            error=error,
            triage_since=None,
            next_check_at=None,
        )
        audit_record(
            tenant_id=entry.tenant_id, actor=actor, action=f"ledger.settle.{outcome}", target=entry, note=note
        )
    entry.refresh_from_db()
    return entry
