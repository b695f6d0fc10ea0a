"""What an operator does from the triage queue besides settling: ask the executor again now.

Settling is `ledger_settle` (services.py); deciding approvals is `approval_decide`
(approvals.py).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.audit.services import audit_record

from .execution_hooks import entry_execution
from .models import LedgerEntry


def ledger_reconcile_now(*, entry: LedgerEntry, actor: str, note: str) -> str:
    """An operator asks the executor's reconcile hook about one entry at once.

    Writes an audit event with the operator's note, then runs one reconciliation attempt
    (which records the attempt and, when the answer is definite, the transition). Returns
    the entry's state afterwards. Raises ValidationError without a note.
    """
    if not note.strip():
        raise ValidationError("Say why: a note is required to reconcile an entry by hand.")
    with transaction.atomic():
        audit_record(
            tenant_id=entry.tenant_id, actor=actor, action="ledger.reconcile_now", target=entry,
            note=note.strip(),
        )
    return entry_execution().reconcile(str(entry.pk), actor)
