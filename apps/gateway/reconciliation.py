"""Asking an executor what became of an uncertain call; the ledger records the answer."""

from __future__ import annotations

import logging
from typing import Any

from apps.ledger.models import LedgerState
from apps.ledger.reconciliation import RECONCILER, ledger_record_reconcile_answer
from apps.ledger.selectors import ledger_entry_to_run

from .contracts import VersionSpec
from .execution_requests import entry_execution_request
from .executors import reconcile
from .executors.base import ReconcileAnswer
from .pipeline.normalize import args_hash

logger = logging.getLogger("toolhub.gateway")


def ledger_reconcile_entry(*, entry_id: Any, actor: str = RECONCILER) -> str:
    """Ask the executor's reconcile hook about one unknown entry and record the answer.

    Returns the entry's state afterwards (ledger_record_reconcile_answer says what each
    answer does). Safe to run twice: a settled entry is left alone. Raises LookupError for
    an entry that does not exist.
    """
    entry = ledger_entry_to_run(pk=entry_id)
    if entry is None:
        raise LookupError(f"no ledger entry {entry_id}")
    if entry.state != LedgerState.UNKNOWN:
        return str(entry.state)
    try:
        answer = reconcile(entry.version.executor, entry_execution_request(entry))
    except Exception as exc:  # noqa: BLE001 - a broken hook is an unclear answer, not a crash
        logger.exception("reconcile hook of %s failed", entry.tool.name)
        answer = ReconcileAnswer(found=None, note=f"the reconcile hook failed: {type(exc).__name__}")
    return ledger_record_reconcile_answer(
        entry=entry,
        actor=actor,
        found=answer.found,
        result=answer.result,
        note=answer.note,
        retry=answer.retry,
    )


def entry_arguments_hash(entry: Any) -> str:
    """The idempotency hash of an entry's stored arguments (its version loaded)."""
    return args_hash(entry.arguments, VersionSpec.from_model(entry.version))
