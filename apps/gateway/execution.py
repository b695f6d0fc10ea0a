"""Run prepared calls: reads directly, everything else under the ledger, in the request or on
a worker. Executors never run inside a database transaction.

`pipeline.plan.execution_plan` decides how each call runs; this module carries it out:
record the intent, execute or enqueue, wait a while when the client asked to, and record
what is known afterwards. Answers that need no executor come from replies.py.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from django.conf import settings
from kombu.exceptions import OperationalError

from apps.common.errors import InternalError, ToolHubError, ToolTimeoutError, UnavailableError, UpstreamError
from apps.common.request_context import in_current_context
from apps.ledger.models import ApprovalStatus, LedgerEntry, LedgerState
from apps.ledger.selectors import approval_status_of, ledger_entry_for_call, ledger_entry_to_run
from apps.ledger.services import (
    ApprovalSpec,
    IntentSpec,
    ledger_claim,
    ledger_fail_intent,
    ledger_open_intent,
    ledger_record_outcome,
)
from apps.tenancy.authentication import AgentPrincipal

from . import counters, metrics
from .contracts import InvokeOptions, Outcome, PreparedCall, ToolCall, VersionSpec, thaw
from .envelopes import accepted_envelope, pending_approval_envelope
from .executors import execute
from .executors.base import (
    ExecutionAmbiguous,
    ExecutionError,
    ExecutionNotSent,
    ExecutionRejected,
    ExecutionRequest,
    ExecutionTimedOut,
)
from .pipeline.plan import ExecutionPlan, Run, execution_plan, idempotency_key
from .replies import execution_envelope, replay, uncertain

logger = logging.getLogger("toolhub.gateway")

_BATCH_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="toolhub-batch")


def execution_request(
    prepared: PreparedCall, *, tenant_id: int, tenant_slug: str, agent_id: int, task_id: str,
    idempotency_key: str | None,
) -> ExecutionRequest:
    """What the executor is asked: from a prepared call, or one rebuilt from its ledger entry."""
    version = prepared.version
    return ExecutionRequest(
        tenant_slug=tenant_slug,
        tenant_id=tenant_id,
        agent_id=agent_id,
        task_id=task_id,
        call_id=prepared.call.call_id,
        tool_name=version.tool_name,
        version_number=version.number,
        arguments=thaw(prepared.arguments),
        timeout_s=version.timeout_s,
        config=thaw(version.executor_config),
        subject=prepared.subject,
        idempotency_key=idempotency_key,
        platform_owned=version.platform_owned,
    )


def prepared_from_entry(entry: LedgerEntry) -> PreparedCall:
    """The call an entry recorded, as it passed validation then (its version loaded)."""
    version = VersionSpec.from_model(entry.version)
    return PreparedCall(
        call=ToolCall(call_id=entry.call_id, name=version.tool_name, arguments=entry.arguments),
        version=version,
        arguments=entry.arguments,
        args_hash=entry.args_hash,
        subject=entry.subject,
    )


def entry_execution_request(entry: LedgerEntry) -> ExecutionRequest:
    """What the executor is (or was) asked for this entry, rebuilt from the ledger row alone."""
    return execution_request(
        prepared_from_entry(entry),
        tenant_id=entry.tenant_id,
        tenant_slug=entry.tenant.slug,
        agent_id=entry.agent_id,
        task_id=entry.task_id,
        idempotency_key=entry.key,
    )


def plan_of(prepared: PreparedCall, options: InvokeOptions) -> ExecutionPlan:
    return execution_plan(
        prepared, wait_s=options.wait_s, default_approval_expires_s=settings.TOOLHUB_APPROVAL_EXPIRES_S
    )


def execute_all(
    principal: AgentPrincipal, options: InvokeOptions, prepared: Sequence[PreparedCall | Outcome]
) -> list[Outcome]:
    """Direct reads concurrently (when there are several); the rest one by one in the calls' order."""
    plans = {i: plan_of(p, options) for i, p in enumerate(prepared) if isinstance(p, PreparedCall)}
    reads = [i for i, plan in plans.items() if plan.run is Run.DIRECT]
    futures: dict[int, Future[Outcome]] = {}
    if len(reads) > 1:
        futures = {
            i: _BATCH_POOL.submit(
                in_current_context(run_readonly), principal=principal, options=options, prepared=prepared[i]
            )
            for i in reads
        }
    outcomes: dict[int, Outcome] = {}
    for i, p in enumerate(prepared):
        if isinstance(p, Outcome):
            outcomes[i] = p
        elif i in futures:
            continue
        elif plans[i].uses_ledger:
            outcomes[i] = run_ledgered(principal=principal, options=options, prepared=p, plan=plans[i])
        else:
            outcomes[i] = run_readonly(principal=principal, options=options, prepared=p)
    for i, future in futures.items():
        outcomes[i] = future.result()
    return [outcomes[i] for i in range(len(prepared))]


@metrics.timed(metrics.EXECUTION)
def run_readonly(*, principal: AgentPrincipal, options: InvokeOptions, prepared: PreparedCall) -> Outcome:
    """Execute a readonly/recomputable call directly: no ledger row, nothing to reconcile."""
    call, version = prepared.call, prepared.version
    request = execution_request(
        prepared,
        tenant_id=principal.tenant_id,
        tenant_slug=principal.tenant_slug,
        agent_id=principal.agent_id,
        task_id=options.task_id,
        idempotency_key=None,
    )
    try:
        result = execute(version.executor, request)
    except ExecutionRejected as exc:
        return Outcome(
            call=call,
            version=version,
            envelope=exc.error.as_envelope(call_id=call.call_id, tool=version.tool_name),
        )
    except ExecutionTimedOut:
        error: ToolHubError = ToolTimeoutError(
            f"{version.tool_name} did not answer within {version.timeout_s} s.",
            hint="It changes nothing, but calling it the same way will likely time out again: "
            "narrow the request (fewer items, a shorter range) or tell the user it is slow now.",
        )
        return Outcome(
            call=call,
            version=version,
            envelope=error.as_envelope(call_id=call.call_id, tool=version.tool_name),
        )
    except ExecutionError as exc:
        logger.warning("readonly %s failed upstream: %s", version.tool_name, exc)
        error = UpstreamError(
            f"{version.tool_name}'s external system failed to answer.",
            hint="The problem is on the provider's side; tell the user and try later, not now.",
        )
        return Outcome(
            call=call,
            version=version,
            envelope=error.as_envelope(call_id=call.call_id, tool=version.tool_name),
        )
    if prepared.is_prerequisite:
        counters.mark_done(tenant_id=principal.tenant_id, task_id=options.task_id, tool=version.tool_name)
    return Outcome(call=call, version=version, result=result)


@metrics.timed(metrics.EXECUTION)
def run_ledgered(
    *, principal: AgentPrincipal, options: InvokeOptions, prepared: PreparedCall, plan: ExecutionPlan
) -> Outcome:
    """Execute a call at most once per idempotency key, with the ledger around it.

    Runs in the request, or records the intent and lets a Celery task run it (plan.run is
    WORKER or APPROVAL), answering `accepted` / `pending_approval` with a poll path.
    """
    call, version = prepared.call, prepared.version
    key = idempotency_key(
        tenant_slug=principal.tenant_slug,
        task_id=options.task_id,
        call_id=call.call_id,
        tool=version.tool_name,
        args_hash=prepared.args_hash,
    )
    if prepared.seen_before:
        # A retry: one read answers it, where an INSERT would fail on the key and roll back.
        existing = ledger_entry_for_call(
            tenant_id=principal.tenant_id, task_id=options.task_id, call_id=call.call_id
        )
        if existing is not None:
            return replay(existing, key, prepared)
    approval = None
    if plan.run is Run.APPROVAL:
        assert prepared.approval_reason is not None
        approval = ApprovalSpec(reason=prepared.approval_reason, expires_s=plan.approval_expires_s)
    opened = ledger_open_intent(
        spec=IntentSpec(
            tenant_id=principal.tenant_id,
            agent_id=principal.agent_id,
            key=key,
            task_id=options.task_id,
            call_id=call.call_id,
            tool_id=version.tool_id,
            version_id=version.version_id,
            subject=prepared.subject,
            args_hash=prepared.args_hash,
            arguments=thaw(prepared.arguments),
            run_async=plan.on_worker,
            approval=approval,
        ),
        actor=f"agent:{principal}",
    )
    entry = opened.entry
    execution_id = str(entry.pk)
    if not opened.created:
        return replay(entry, key, prepared)
    if plan.run is Run.APPROVAL:
        envelope = pending_approval_envelope(call_id=call.call_id, execution_id=execution_id)
        return Outcome(call=call, version=version, envelope=envelope, execution_id=execution_id)
    if plan.run is Run.LEDGERED:
        request = execution_request(
            prepared,
            tenant_id=principal.tenant_id,
            tenant_slug=principal.tenant_slug,
            agent_id=principal.agent_id,
            task_id=options.task_id,
            idempotency_key=key,
        )
        return execute_entry(entry=entry, request=request, prepared=prepared)
    _enqueue(entry, call)
    if plan.wait_s > 0:
        entry = _wait_for_outcome(entry.pk, plan.wait_s)
        if entry.state != LedgerState.INTENT:
            return Outcome(
                call=call,
                version=version,
                envelope=execution_envelope(entry=entry),
                execution_id=execution_id,
            )
    envelope = accepted_envelope(call_id=call.call_id, execution_id=execution_id)
    return Outcome(call=call, version=version, envelope=envelope, execution_id=execution_id)


def _enqueue(entry: LedgerEntry, call: ToolCall) -> None:
    """Hand an intent to the workers; if the broker refuses, nothing will run: say so."""
    from .tasks import enqueue_entry

    try:
        enqueue_entry(str(entry.pk))
    except OperationalError:
        logger.error("broker unreachable; refusing async call %s", entry.pk)
        error = UnavailableError(
            "ToolHub cannot reach its task queue, so this call was not run.",
            hint="Nothing happened. This is temporary on ToolHub's side; try again in a minute "
            "with a new call id.",
            retry_after_s=30,
            http_status=503,
        )
        ledger_fail_intent(
            entry_id=entry.pk,
            actor="gateway",
            error=error.as_envelope(call_id=call.call_id),
            note="broker unreachable at enqueue",
        )
        raise error from None


def _wait_for_outcome(entry_id: Any, wait_s: float) -> LedgerEntry:
    """Poll the entry until it leaves `intent` or the client's wait is over."""
    deadline = time.monotonic() + wait_s
    pause = 0.02
    while True:
        entry = ledger_entry_to_run(pk=entry_id)
        assert entry is not None  # entries are never deleted
        remaining = deadline - time.monotonic()
        if entry.state != LedgerState.INTENT or remaining <= 0:
            return entry
        time.sleep(min(pause, remaining))
        pause = min(pause * 2, 0.25)


def execute_async_entry(*, entry_id: Any) -> None:
    """A worker runs an entry recorded by an earlier request (the Celery task's body).

    Does nothing when the entry was settled meanwhile, awaits or lacks approval, or another
    delivery of the same task already started it (the sweeper deals with that one if it
    never finishes). Otherwise claims it and executes it like the request would have.
    """
    entry = ledger_entry_to_run(pk=entry_id)
    if entry is None or entry.state != LedgerState.INTENT:
        return
    if approval_status_of(entry_id=entry.pk) not in (None, ApprovalStatus.APPROVED):
        return
    if not ledger_claim(entry_id=entry.pk):
        return
    execute_entry(entry=entry, request=entry_execution_request(entry), prepared=prepared_from_entry(entry))


def execute_entry(*, entry: LedgerEntry, request: ExecutionRequest, prepared: PreparedCall) -> Outcome:
    """Run the executor of a fresh `intent` entry and record what is known afterwards."""
    call, version = prepared.call, prepared.version
    execution_id = str(entry.pk)
    actor = f"executor:{version.executor}"
    try:
        result = execute(version.executor, request)
    except ExecutionRejected as exc:
        envelope = exc.error.as_envelope(call_id=call.call_id, tool=version.tool_name)
        ledger_record_outcome(
            entry=entry, to_state=LedgerState.FAILED, actor=actor, error=envelope, note=exc.error.message
        )
        return Outcome(call=call, version=version, envelope=envelope, execution_id=execution_id)
    except ExecutionNotSent as exc:
        error: ToolHubError = UpstreamError(
            f"{version.tool_name}'s external system could not be reached; nothing was sent, "
            "so nothing happened.",
            hint="The provider is down, unreachable or wrongly configured in ToolHub. Tell the user "
            "the action was not done; try again later with a new call id.",
        )
        envelope = error.as_envelope(call_id=call.call_id, tool=version.tool_name)
        ledger_record_outcome(
            entry=entry, to_state=LedgerState.FAILED, actor=actor, error=envelope, note=str(exc)
        )
        return Outcome(call=call, version=version, envelope=envelope, execution_id=execution_id)
    except (ExecutionTimedOut, ExecutionAmbiguous) as exc:
        timed_out = isinstance(exc, ExecutionTimedOut)
        error = uncertain(
            ToolTimeoutError if timed_out else UpstreamError,
            f"{version.tool_name} did not answer within {version.timeout_s} s."
            if timed_out
            else f"{version.tool_name}'s external system failed after receiving the call.",
            entry.pk,
        )
        ledger_record_outcome(entry=entry, to_state=LedgerState.UNKNOWN, actor=actor, note=str(exc))
        return Outcome(
            call=call,
            version=version,
            envelope=error.as_envelope(call_id=call.call_id, tool=version.tool_name),
            execution_id=execution_id,
        )
    except Exception:
        internal = InternalError()
        logger.exception(
            "executor of %s crashed (error id %s)",
            version.tool_name,
            internal.error_id,
            extra={"error_id": internal.error_id},
        )
        ledger_record_outcome(
            entry=entry,
            to_state=LedgerState.UNKNOWN,
            actor=actor,
            note=f"executor crashed, error id {internal.error_id}",
        )
        return Outcome(
            call=call,
            version=version,
            envelope=internal.as_envelope(call_id=call.call_id, tool=version.tool_name),
            execution_id=execution_id,
        )
    ledger_record_outcome(entry=entry, to_state=LedgerState.COMMITTED, actor=actor, result=result)
    if prepared.is_prerequisite:
        counters.mark_done(tenant_id=entry.tenant_id, task_id=entry.task_id, tool=version.tool_name)
    return Outcome(call=call, version=version, result=result, execution_id=execution_id)
