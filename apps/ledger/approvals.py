"""Operators' decisions on calls that need approval before they run."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from apps.audit.services import audit_record
from apps.common.errors import ForbiddenError

from .execution_hooks import entry_execution
from .lock_objects import approval_for_update
from .models import Approval, ApprovalStatus, LedgerState
from .services import ledger_fail_intent


class ApprovalRefused(Exception):
    """The approval cannot be decided (already decided, expired, or its call changed)."""


def _still_bound(approval: Approval) -> bool:
    """The call about to run is exactly the one approved: same version, same arguments.

    The stored hashes must agree, and the stored arguments must still hash to them: a
    changed arguments column would otherwise run something nobody approved.
    """
    entry = approval.entry
    return (
        entry.version_id == approval.version_id
        and entry.args_hash == approval.args_hash
        and entry_execution().arguments_hash(entry) == entry.args_hash
    )


def approval_decide(*, approval: Approval, approve: bool, actor: str, note: str) -> Approval:
    """Approve (the call is enqueued for execution) or reject (the call is refused).

    Writes the approval, the entry's transition when rejected, and an audit event, in one
    transaction; the execution is enqueued only once it commits. Raises ValidationError
    without a note, ApprovalRefused when the approval is no longer pending or its call no
    longer matches what was asked for.
    """
    if not note.strip():
        raise ValidationError("Say why: a note is required to approve or reject.")
    now = timezone.now()
    with transaction.atomic():
        locked = approval_for_update(pk=approval.pk)
        if locked.status != ApprovalStatus.PENDING or locked.entry.state != LedgerState.INTENT:
            raise ApprovalRefused(f"This approval is already {locked.status}.")
        if locked.expires_at <= now:
            raise ApprovalRefused("This approval has expired; the call will be refused.")
        if approve and not _still_bound(locked):
            raise ApprovalRefused("The call no longer matches what was submitted for approval.")
        locked.status = ApprovalStatus.APPROVED if approve else ApprovalStatus.REJECTED
        locked.decided_by, locked.decided_at, locked.note = actor, now, note.strip()
        locked.save(update_fields=["status", "decided_by", "decided_at", "note"])
        if approve:
            entry_id, enqueue = str(locked.entry_id), entry_execution().enqueue
            transaction.on_commit(lambda: enqueue(entry_id))
        else:
            error = ForbiddenError(
                "An operator rejected this call, so it was not run.",
                hint=f"Operator's note: {note.strip()} Tell the user; do not make the same call again.",
            ).as_envelope(call_id=locked.entry.call_id, tool=locked.entry.tool.name)
            ledger_fail_intent(entry_id=locked.entry_id, actor=actor, error=error, note=note)
        audit_record(
            tenant_id=locked.tenant_id,
            actor=actor,
            action=f"approval.{locked.status}",
            target=locked,
            note=note,
        )
    return locked
