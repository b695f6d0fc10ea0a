"""The ledger's transition table, and the one function that moves an entry along it.

A transition is a conditional `UPDATE … WHERE state = <from>`: of two concurrent movers
(a reconciler and an operator, two operators) exactly one wins, the other gets
`TransitionRefused`. Every transition that happens is kept as a LedgerEvent, written with
it in one statement (apps/common/db.py): one round trip on the invoke path.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from apps.common.db import update_then_insert

from .models import LedgerEntry, LedgerEvent, LedgerState

TRANSITIONS: dict[str, frozenset[str]] = {
    LedgerState.INTENT: frozenset({LedgerState.COMMITTED, LedgerState.FAILED, LedgerState.UNKNOWN}),
    LedgerState.UNKNOWN: frozenset({LedgerState.COMMITTED, LedgerState.FAILED}),
    LedgerState.COMMITTED: frozenset(),
    LedgerState.FAILED: frozenset(),
}
FINAL_STATES = frozenset({LedgerState.COMMITTED, LedgerState.FAILED})


class TransitionRefused(Exception):
    """The entry was not in the expected state (already moved by someone else, or final)."""


def transition(
    *,
    entry_id: Any,
    from_state: str,
    to_state: str,
    actor: str,
    note: str = "",
    data: dict[str, Any] | None = None,
    **fields: Any,
) -> None:
    """Move one entry from `from_state` to `to_state`, setting `fields`, and record the event.

    Atomic on its own, or part of the caller's transaction. Raises TransitionRefused when
    the table forbids the move or the entry is no longer in `from_state`.
    """
    if to_state not in TRANSITIONS[from_state]:
        raise TransitionRefused(f"{from_state} → {to_state} is not a ledger transition")
    now = timezone.now()
    if to_state in FINAL_STATES:
        fields.setdefault("settled_at", now)
    moved = update_then_insert(
        LedgerEntry,
        where={"id": entry_id, "state": from_state},
        values={"state": to_state, "updated_at": now, **fields},
        then=LedgerEvent(
            entry_id=entry_id,
            from_state=from_state,
            to_state=to_state,
            actor=actor,
            note=note,
            data=data or {},
        ),
    )
    if not moved:
        raise TransitionRefused(f"entry {entry_id} is no longer {from_state}")
