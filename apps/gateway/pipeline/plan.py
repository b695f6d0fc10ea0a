"""How a validated call runs: in the request or on a worker, with or without the ledger, and
under which idempotency key."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from apps.gateway.contracts import PreparedCall

from .approval import approval_expires_s


class Run(StrEnum):
    # A read in the request: no ledger row, nothing to reconcile.
    DIRECT = "direct"
    # The intent is recorded, then the executor runs in the request.
    LEDGERED = "ledgered"
    # The intent is recorded and a worker runs it; the request may wait a while for it.
    WORKER = "worker"
    # The intent and a pending approval are recorded; a worker runs it once approved.
    APPROVAL = "approval"


@dataclass(frozen=True)
class ExecutionPlan:
    run: Run
    # How long the request waits for a worker's outcome before answering `accepted`.
    wait_s: float = 0
    approval_expires_s: int = 0

    @property
    def uses_ledger(self) -> bool:
        return self.run is not Run.DIRECT

    @property
    def on_worker(self) -> bool:
        return self.run in (Run.WORKER, Run.APPROVAL)


def execution_plan(
    prepared: PreparedCall, *, wait_s: float, default_approval_expires_s: int
) -> ExecutionPlan:
    """Approval first; async versions and calls the client waits for briefly go to a worker
    (a read only when the wait is shorter than its timeout), and versions that always run on
    one (code runs) too, a call that names no wait waiting up to their timeout; other writes
    run in the request under the ledger; other reads run directly."""
    version = prepared.version
    if prepared.approval_reason is not None:
        return ExecutionPlan(
            Run.APPROVAL, approval_expires_s=approval_expires_s(version, default_approval_expires_s)
        )
    if version.waits_for_worker:
        return ExecutionPlan(Run.WORKER, wait_s=wait_s or version.timeout_s)
    if version.mode == "async" or (wait_s > 0 and (version.is_write or wait_s < version.timeout_s)):
        return ExecutionPlan(Run.WORKER, wait_s=wait_s)
    if version.is_write:
        return ExecutionPlan(Run.LEDGERED)
    return ExecutionPlan(Run.DIRECT)


def idempotency_key(*, tenant_slug: str, task_id: str, call_id: str, tool: str, args_hash: str) -> str:
    """`{tenant}/{task_id}/{call_id}/{tool}/{args_hash}`, each part percent-encoded (contract §5).

    Only '%' and '/' are encoded, so a '/' in the key always separates parts and two
    different (task, call) pairs never make the same key, while the usual ids read as sent.
    The key is also the upstream's `Idempotency-Key`, so it must be unambiguous on its own.
    """
    return "/".join(_key_part(part) for part in (tenant_slug, task_id, call_id, tool, args_hash))


def _key_part(text: str) -> str:
    return text.replace("%", "%25").replace("/", "%2F")
