"""Row locks of the ledger, in one place (Saleor's lock_objects pattern)."""

from __future__ import annotations

from typing import Any

from .models import LedgerEntry


def ledger_entry_for_update(*, pk: Any) -> LedgerEntry:
    """The entry, locked until the surrounding transaction ends. Call inside atomic()."""
    return LedgerEntry.objects.select_for_update().get(pk=pk)
