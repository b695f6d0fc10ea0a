"""Run prepared calls: reads directly, everything else under the ledger, in the request or on
a worker. Executors never run inside a database transaction.

`pipeline.plan.execution_plan` decides how each call runs; this module carries it out:
record the intent, execute or enqueue, wait a while when the client asked to, and record
what is known afterwards. It returns typed outcomes (contracts.Outcome); replies.py renders
them, and replays.py answers a key the ledger already holds. Entries go to the workers
through the ledger's execution hook (apps/ledger/execution_hooks.py), which the gateway's
Celery edge registers, so nothing here imports the tasks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from django.conf import settings
from kombu.exceptions import OperationalError

from apps.common.errors import InternalError, ToolHubError, ToolTimeoutError, UnavailableError, UpstreamError
from apps.common.request_context import in_current_context
from apps.ledger.execution_hooks import entry_execution
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
from .contracts import (
    Executed,
    InvokeOptions,
    Outcome,
    Pending,
    PreparedCall,
    Refused,
    ToolCall,
    WouldRun,
    thaw,
)
from .execution_requests import call_context, entry_execution_request, execution_request, prepared_from_entry
from .executors import execute
from .executors.base import (
    AnswerTooLarge,
    ExecutionAmbiguous,
    ExecutionError,
    ExecutionNotSent,
    ExecutionRejected,
    ExecutionRequest,
    ExecutionTimedOut,
)
from .pipeline.plan import ExecutionPlan, Run, execution_plan, idempotency_key
from .replays import entry_outcome, replay, uncertain
from .replies import error_envelope

logger = logging.getLogger("toolhub.gateway")

_BATCH_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="toolhub-batch")


def _too_large(tool: str, exc: AnswerTooLarge) -> str:
    return (
        f"{tool}'s external system answered more than {exc.limit} bytes, the most ToolHub reads of "
        "an answer (TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES), so the answer was not read."
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


def dry_run(prepared: PreparedCall, *, tenant_slug: str, task_id: str) -> Outcome:
    """What would run, and under which key: the validation layer passed, nothing runs."""
    version = prepared.version
    key = None
    if version.is_write:
        key = idempotency_key(
            tenant_slug=tenant_slug,
            task_id=task_id,
            call_id=prepared.call.call_id,
            tool=version.tool_name,
            args_hash=prepared.args_hash,
        )
    answer = WouldRun(arguments=prepared.arguments, args_hash=prepared.args_hash, idempotency_key=key)
    return Outcome(call=prepared.call, version=version, answer=answer)


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
        toolset=options.toolset,
        phase=options.phase,
    )
    try:
        result = execute(version.executor, request)
    except ExecutionRejected as exc:
        return Outcome(call=call, version=version, answer=Refused(exc.error))
    except ExecutionTimedOut:
        timed_out = ToolTimeoutError(
            f"{version.tool_name} did not answer within {version.timeout_s} s.",
            hint="It changes nothing, but calling it the same way will likely time out again: "
            "narrow the request (fewer items, a shorter range) or tell the user it is slow now.",
        )
        return Outcome(call=call, version=version, answer=Refused(timed_out))
    except ExecutionError as exc:
        logger.warning("readonly %s failed upstream: %s", version.tool_name, exc)
        if isinstance(exc, AnswerTooLarge):
            failed = UpstreamError(
                _too_large(version.tool_name, exc),
                hint="Ask for less in one call if the tool allows it (fewer items, a narrower range, "
                "a smaller page); otherwise tell the user the answer is too large to read.",
            )
        else:
            failed = UpstreamError(
                f"{version.tool_name}'s external system failed to answer.",
                hint="The problem is on the provider's side; tell the user and try later, not now.",
            )
        return Outcome(call=call, version=version, answer=Refused(failed))
    if prepared.is_prerequisite:
        counters.mark_done(tenant_id=principal.tenant_id, task_id=options.task_id, tool=version.tool_name)
    return Outcome(call=call, version=version, answer=Executed(result))


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
            parent_id=options.parent_execution_id,
            context=call_context(prepared, options) if plan.on_worker else {},
        ),
        actor=f"agent:{principal}",
    )
    entry = opened.entry
    execution_id = str(entry.pk)
    if not opened.created:
        return replay(entry, key, prepared)
    if plan.run is Run.APPROVAL:
        return Outcome(
            call=call, version=version, answer=Pending(awaiting_approval=True), execution_id=execution_id
        )
    if plan.run is Run.LEDGERED:
        request = execution_request(
            prepared,
            tenant_id=principal.tenant_id,
            tenant_slug=principal.tenant_slug,
            agent_id=principal.agent_id,
            task_id=options.task_id,
            idempotency_key=key,
            toolset=options.toolset,
            phase=options.phase,
            execution_id=execution_id,
        )
        return execute_entry(entry=entry, request=request, prepared=prepared)
    _enqueue(entry, call)
    if plan.wait_s > 0:
        entry = _wait_for_outcome(entry.pk, plan.wait_s)
        if entry.state != LedgerState.INTENT:
            # The entry's answer, logged against the call as the agent sent it.
            return replace(entry_outcome(entry), call=call)
    return Outcome(call=call, version=version, answer=Pending(), execution_id=execution_id)


def _enqueue(entry: LedgerEntry, call: ToolCall) -> None:
    """Hand an intent to the workers; if the broker refuses, nothing will run: say so."""
    try:
        entry_execution().enqueue(str(entry.pk))
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
            error=error_envelope(error, call_id=call.call_id),
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

    def refused(error: ToolHubError) -> Outcome:
        return Outcome(call=call, version=version, answer=Refused(error), execution_id=execution_id)

    def failed(error: ToolHubError, note: str) -> Outcome:
        stored = error_envelope(error, call_id=call.call_id, tool=version.tool_name)
        ledger_record_outcome(entry=entry, to_state=LedgerState.FAILED, actor=actor, error=stored, note=note)
        return refused(error)

    try:
        result = execute(version.executor, request)
    except ExecutionRejected as exc:
        return failed(exc.error, exc.error.message)
    except ExecutionNotSent as exc:
        not_sent = UpstreamError(
            f"{version.tool_name}'s external system could not be reached; nothing was sent, "
            "so nothing happened.",
            hint="The provider is down, unreachable or wrongly configured in ToolHub. Tell the user "
            "the action was not done; try again later with a new call id.",
        )
        return failed(not_sent, str(exc))
    except (ExecutionTimedOut, ExecutionAmbiguous) as exc:
        timed_out = isinstance(exc, ExecutionTimedOut)
        if timed_out:
            said = f"{version.tool_name} did not answer within {version.timeout_s} s."
        elif isinstance(exc, AnswerTooLarge):
            said = _too_large(version.tool_name, exc) + " The call was sent, so it may have happened."
        else:
            said = f"{version.tool_name}'s external system failed after receiving the call."
        ledger_record_outcome(entry=entry, to_state=LedgerState.UNKNOWN, actor=actor, note=str(exc))
        return refused(uncertain(ToolTimeoutError if timed_out else UpstreamError, said, entry.pk))
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
        return refused(internal)
    ledger_record_outcome(entry=entry, to_state=LedgerState.COMMITTED, actor=actor, result=result)
    if prepared.is_prerequisite:
        counters.mark_done(tenant_id=entry.tenant_id, task_id=entry.task_id, tool=version.tool_name)
    return Outcome(call=call, version=version, answer=Executed(result), execution_id=execution_id)
