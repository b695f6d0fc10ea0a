"""Reads of the ledger; every one takes the tenant."""

from __future__ import annotations

from typing import Any

from .models import LedgerEntry


def ledger_entry_for_call(*, tenant_id: int, task_id: str, call_id: str) -> LedgerEntry | None:
    """The entry recorded for this call id of this task, if any."""
    return LedgerEntry.objects.filter(tenant_id=tenant_id, task_id=task_id, call_id=call_id).first()


def ledger_entry_get(*, tenant_id: int, pk: Any) -> LedgerEntry | None:
    """One entry of this tenant, or None (another tenant's entry looks like a missing one)."""
    return LedgerEntry.objects.for_tenant(tenant_id).select_related("tool", "version").filter(pk=pk).first()
