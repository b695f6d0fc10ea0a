"""Row locks of the ledger, in one place (Saleor's lock_objects pattern)."""

from __future__ import annotations

from typing import Any

from .models import Approval


def approval_for_update(*, pk: Any) -> Approval:
    """The approval with its entry, version and tool, locked until the surrounding transaction
    ends. Call inside atomic()."""
    return Approval.objects.select_for_update().select_related("entry__version", "entry__tool").get(pk=pk)
