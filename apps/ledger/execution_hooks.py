"""What the ledger asks of the code that executes its entries: the gateway registers it.

The ledger records and the gateway executes; the gateway sits above the ledger, so the
ledger may not import it. Operators act from the ledger's admin, and two of their actions
must reach an executor: approving a call runs it, and "Reconcile now" asks the executor's
reconcile hook. Approving also checks that the stored arguments still hash to the hash the
approval was given for, and only the gateway knows how a call is hashed. The gateway hands
these three functions over when Django starts (GatewayConfig.ready).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured

from .models import LedgerEntry


@dataclass(frozen=True)
class EntryExecution:
    # Run an `intent` entry on a worker (entry id); the caller calls it after its commit.
    enqueue: Callable[[str], None]
    # Ask an `unknown` entry's reconcile hook once and record the answer (entry id, actor);
    # returns the entry's state afterwards.
    reconcile: Callable[[str, str], str]
    # The idempotency hash of the entry's stored arguments, as the gateway computes it.
    arguments_hash: Callable[[LedgerEntry], str]


_registered: list[EntryExecution] = []


def register_entry_execution(execution: EntryExecution) -> None:
    _registered[:] = [execution]


def entry_execution() -> EntryExecution:
    if not _registered:
        raise ImproperlyConfigured("Nothing executes ledger entries: is apps.gateway installed?")
    return _registered[0]
