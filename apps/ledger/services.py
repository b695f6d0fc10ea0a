"""Writes of the ledger: open an intent, record an outcome.

The intent row is committed in its own short transaction *before* any executor runs, so a
crash after it leaves a row that says "this may have happened" (see the sweeper).
Idempotency rests on the unique constraints of LedgerEntry, not on a prior SELECT.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from .models import LedgerEntry, LedgerEvent, LedgerState
from .states import transition


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


@dataclass(frozen=True)
class OpenedIntent:
    entry: LedgerEntry
    created: bool  # False: the call id was already used in this task (a replay or a conflict)


def ledger_open_intent(*, spec: IntentSpec, actor: str) -> OpenedIntent:
    """Record the intent of a side effect, or return the entry already recorded for this call.

    Writes a LedgerEntry in state `intent` and its first event, committed before returning.
    Concurrent duplicates race on the unique constraints; the losers get the winner's row.
    """
    try:
        with transaction.atomic():
            entry = LedgerEntry.objects.create(
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
            )
            LedgerEvent.objects.create(entry=entry, from_state="", to_state=LedgerState.INTENT, actor=actor)
        return OpenedIntent(entry=entry, created=True)
    except IntegrityError:
        existing = LedgerEntry.objects.get(
            tenant_id=spec.tenant_id, task_id=spec.task_id, call_id=spec.call_id
        )
        return OpenedIntent(entry=existing, created=False)


def ledger_record_outcome(
    *,
    entry: LedgerEntry,
    to_state: str,
    actor: str,
    result: Any = None,
    error: dict[str, Any] | None = None,
    note: str = "",
) -> None:
    """Move a fresh `intent` entry to committed, failed or unknown after its execution."""
    transition(
        entry_id=entry.pk,
        from_state=LedgerState.INTENT,
        to_state=to_state,
        actor=actor,
        note=note,
        result=result,
        error=error,
    )
