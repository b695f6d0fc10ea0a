"""The invoke pipeline's orchestration: validation layer, then ledger and execution.

    resolve → parse → normalize → schema → authorize → argument rules      (pure stages)
    → task history → state rules → loop guard → rate limit                   (pure, on counters)
    → ledger intent (writes) → execute → ledger outcome → shape → envelope   (execution layer)

Every outcome is an envelope (contract §3); every call is written to the invocation log.
Executors never run inside a database transaction.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone
from kombu.exceptions import OperationalError

from apps.audit.invocation_log import invocation_record
from apps.capabilities.services import capability_note_unknown_tool
from apps.catalog.exports import strip_optional_nulls
from apps.common.errors import (
    IdempotencyConflictError,
    InProgressError,
    InternalError,
    OutcomeUnknownError,
    ToolHubError,
    ToolTimeoutError,
    UnavailableError,
    UnknownToolError,
    UpstreamError,
)
from apps.common.request_context import in_current_context
from apps.ledger.models import Approval, ApprovalStatus, LedgerEntry, LedgerState
from apps.ledger.reconciliation import execution_request_for
from apps.ledger.selectors import ledger_entry_for_call
from apps.ledger.services import (
    ApprovalSpec,
    IntentSpec,
    ledger_claim,
    ledger_fail_intent,
    ledger_open_intent,
    ledger_record_outcome,
)
from apps.tenancy.authentication import AgentPrincipal
from apps.tenancy.sessions import SessionClaims, verify_session

from . import counters, metrics
from .contracts import CallContext, PolicySpec, PreparedCall, ToolCall, VersionSpec, thaw
from .envelopes import accepted_envelope, json_size, pending_approval_envelope, result_envelope, shape_result
from .executors import execute
from .executors.base import (
    ExecutionAmbiguous,
    ExecutionError,
    ExecutionNotSent,
    ExecutionRejected,
    ExecutionRequest,
    ExecutionTimedOut,
)
from .pipeline.approval import approval_expires_s, approval_reason
from .pipeline.authorize import apply_bindings
from .pipeline.guards import check_loop, check_rate
from .pipeline.normalize import args_hash, normalize_arguments
from .pipeline.parse import parse_arguments
from .pipeline.rules import check_argument_rules, check_state_rules, history_needed
from .pipeline.schema import validate_arguments
from .selectors import agent_catalog, resolve_tool

logger = logging.getLogger("toolhub.gateway")

_BATCH_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="toolhub-batch")


@dataclass(frozen=True)
class InvokeOptions:
    """What the request says about every call in it."""

    task_id: str
    toolset: str | None = None
    phase: str | None = None
    dry_run: bool = False
    # How long the client waits for a slow call before taking `accepted` (0: run it in the request).
    wait_s: float = 0


@dataclass(frozen=True)
class Outcome:
    """A call after execution, before shaping: a raw result, or a finished envelope."""

    call: ToolCall
    version: VersionSpec | None = None
    result: Any = None
    envelope: dict[str, Any] | None = None
    execution_id: str | None = None
    cached: bool = False

    @property
    def has_result(self) -> bool:
        return self.envelope is None


def idempotency_key(*, tenant_slug: str, task_id: str, call_id: str, tool: str, args_hash: str) -> str:
    """`{tenant}/{task_id}/{call_id}/{tool}/{args_hash}`, each part percent-encoded (contract §5).

    Only '%' and '/' are encoded, so a '/' in the key always separates parts and two
    different (task, call) pairs never make the same key, while the usual ids read as sent.
    The key is also the upstream's `Idempotency-Key`, so it must be unambiguous on its own.
    """
    return "/".join(_key_part(part) for part in (tenant_slug, task_id, call_id, tool, args_hash))


def _key_part(text: str) -> str:
    return text.replace("%", "%25").replace("/", "%2F")


def _context(
    principal: AgentPrincipal,
    session: SessionClaims | None,
    options: InvokeOptions,
    policy: PolicySpec,
    now: datetime,
) -> CallContext:
    return CallContext(
        tenant_id=principal.tenant_id,
        tenant_slug=principal.tenant_slug,
        agent_id=principal.agent_id,
        task_id=options.task_id,
        now=now,
        session=session,
        policy=policy,
    )


@metrics.timed(metrics.VALIDATION)
def prepare_call(
    *,
    principal: AgentPrincipal,
    session: SessionClaims | None,
    options: InvokeOptions,
    call: ToolCall,
    now: datetime,
) -> PreparedCall:
    """The validation layer: every check that can refuse a call before anything runs.

    Reads only the catalog (memoized) and the task counters; raises the ToolHubError the
    model should see. Counts the call for loop, budget and quota checks unless dry_run.
    """
    catalog = agent_catalog(
        tenant_id=principal.tenant_id, agent_id=principal.agent_id, generation=principal.catalog_generation
    )
    version = resolve_tool(catalog=catalog, name=call.name, toolset=options.toolset, phase=options.phase)
    context = _context(principal, session, options, catalog.policy_for(version.tool_id), now)
    # Strict exports let models send null for optional fields: null there means "not given".
    arguments = strip_optional_nulls(parse_arguments(call.arguments), version.parameters)
    # Normalizers first: they make a sloppy but meaningful value the one the schema accepts.
    normalized = normalize_arguments(arguments, version)
    validate_arguments(normalized, version)
    bound = apply_bindings(normalized, version, session)
    check_argument_rules(bound, version, context.policy)
    prepared = PreparedCall(
        call=call,
        version=version,
        arguments=bound,
        # Over the bound arguments: the same call ids from another end user are another call.
        args_hash=args_hash(bound, version),
        subject=session.subject if session else "",
        approval_reason=approval_reason(bound, version, context.policy),
        is_prerequisite=version.tool_name in catalog.prerequisites,
    )
    needs = history_needed(version, context.policy)
    # A repeat of a call id already let through (a client retry, concurrent duplicates) is
    # not a new attempt: it passed the state rules and the loop guard the first time, and
    # the ledger answers it. Only a new call id is checked and counted.
    sighting = counters.see_call(
        tenant_id=principal.tenant_id,
        agent_id=principal.agent_id,
        task_id=options.task_id,
        call=prepared,
        needs=needs,
        required_tools=[r["tool"] for r in version.rules if r.get("type") == "requires_earlier_call"],
        now=now,
        dry_run=options.dry_run,
    )
    first_sight = sighting.first_sight
    try:
        if first_sight:
            check_state_rules(bound, version, context, sighting.history)
            check_loop(sighting.history, version)
        if options.dry_run:
            return prepared
        limit = context.policy.rate_limit_per_minute or settings.TOOLHUB_DEFAULT_RATE_LIMIT_PER_MINUTE
        check_rate(
            calls_in_window=sighting.calls_in_window, limit=limit, retry_after_s=sighting.retry_after_s
        )
    except ToolHubError:
        if first_sight and not options.dry_run:
            counters.forget_call(
                tenant_id=principal.tenant_id, task_id=options.task_id, call=prepared, needs=needs, now=now
            )
        raise
    if not first_sight:
        return replace(prepared, seen_before=True)
    return prepared


def _execution_request(
    principal: AgentPrincipal, options: InvokeOptions, prepared: PreparedCall, key: str | None
) -> ExecutionRequest:
    version = prepared.version
    return ExecutionRequest(
        tenant_slug=principal.tenant_slug,
        task_id=options.task_id,
        call_id=prepared.call.call_id,
        tool_name=version.tool_name,
        version_number=version.number,
        arguments=thaw(prepared.arguments),
        timeout_s=version.timeout_s,
        config=thaw(version.executor_config),
        subject=prepared.subject,
        idempotency_key=key,
        platform_owned=version.platform_owned,
    )


def _poll_path(execution_id: Any) -> str:
    return f"/api/v1/executions/{execution_id}"


def _uncertain(error_cls: type[ToolHubError], message: str, execution_id: Any) -> ToolHubError:
    """The error of a call whose side effect may have happened: never invites a retry."""
    return error_cls(
        message,
        hint="The outcome is unknown and is being checked with the external system. Do not call "
        "again: a second call could repeat the side effect. Tell the user the result is pending; "
        f"its status is at GET {_poll_path(execution_id)}.",
        extra={"execution_id": str(execution_id), "poll": _poll_path(execution_id)},
    )


@metrics.timed(metrics.EXECUTION)
def run_readonly(*, principal: AgentPrincipal, options: InvokeOptions, prepared: PreparedCall) -> Outcome:
    """Execute a readonly/recomputable call directly: no ledger row, nothing to reconcile."""
    call, version = prepared.call, prepared.version
    try:
        result = execute(version.executor, _execution_request(principal, options, prepared, key=None))
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


def _replay(entry: LedgerEntry, key: str, prepared: PreparedCall) -> Outcome:
    """The answer to a call id already recorded in this task (contract §5)."""
    call, version = prepared.call, prepared.version
    if entry.key != key or entry.subject != prepared.subject:
        # Never another call's result: not for other arguments, and not for another end user.
        error: ToolHubError = IdempotencyConflictError(
            f"call id {call.call_id!r} was already used in this task for another tool, other "
            "arguments or another end user.",
            hint="Give every new call its own call id; reuse a call id only to repeat exactly the same "
            "call for the same user.",
        )
        return Outcome(
            call=call,
            version=version,
            envelope=error.as_envelope(call_id=call.call_id, tool=version.tool_name),
        )
    if entry.state == LedgerState.COMMITTED:
        return Outcome(
            call=call, version=version, result=entry.result, execution_id=str(entry.pk), cached=True
        )
    if entry.state == LedgerState.FAILED:
        envelope = {**(entry.error or {}), "call_id": call.call_id, "cached": True}
        return Outcome(call=call, version=version, envelope=envelope, execution_id=str(entry.pk))
    if entry.state == LedgerState.INTENT and _awaits_approval(entry):
        envelope = pending_approval_envelope(call_id=call.call_id, execution_id=str(entry.pk))
        return Outcome(call=call, version=version, envelope=envelope, execution_id=str(entry.pk))
    if entry.state == LedgerState.INTENT:
        wait = max(1, round(version.timeout_s))
        error = InProgressError(
            "This exact call is executing right now.",
            hint=f"Wait {wait} s and send the same call (same call id) again to get its result; "
            "do not send it with a new call id.",
            retry_after_s=wait,
            extra={"execution_id": str(entry.pk), "poll": _poll_path(entry.pk)},
        )
    else:
        error = _uncertain(
            OutcomeUnknownError, "This call was made before and its outcome is still unknown.", entry.pk
        )
    return Outcome(
        call=call,
        version=version,
        envelope=error.as_envelope(call_id=call.call_id, tool=version.tool_name),
        execution_id=str(entry.pk),
    )


def needs_ledger(prepared: PreparedCall, options: InvokeOptions) -> bool:
    """Writes always; any call that runs outside the request (async, short wait, approval)."""
    version = prepared.version
    return (
        version.is_write
        or version.mode == "async"
        or prepared.approval_reason is not None
        or 0 < options.wait_s < version.timeout_s
    )


@metrics.timed(metrics.EXECUTION)
def run_ledgered(*, principal: AgentPrincipal, options: InvokeOptions, prepared: PreparedCall) -> Outcome:
    """Execute a call at most once per idempotency key, with the ledger around it.

    Runs in the request, or — when the version is async, the client waits less than the
    tool's timeout, or an operator must approve first — records the intent and lets a
    Celery task run it, answering `accepted` / `pending_approval` with a poll path.
    """
    call, version = prepared.call, prepared.version
    key = idempotency_key(
        tenant_slug=principal.tenant_slug,
        task_id=options.task_id,
        call_id=call.call_id,
        tool=version.tool_name,
        args_hash=prepared.args_hash,
    )
    approval = None
    if prepared.approval_reason:
        approval = ApprovalSpec(
            reason=prepared.approval_reason,
            expires_s=approval_expires_s(version, settings.TOOLHUB_APPROVAL_EXPIRES_S),
        )
    run_async = approval is not None or version.mode == "async" or options.wait_s > 0
    if prepared.seen_before:
        # A retry: one read answers it, where an INSERT would fail on the key and roll back.
        existing = ledger_entry_for_call(
            tenant_id=principal.tenant_id, task_id=options.task_id, call_id=call.call_id
        )
        if existing is not None:
            return _replay(existing, key, prepared)
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
            run_async=run_async,
            approval=approval,
        ),
        actor=f"agent:{principal}",
    )
    entry = opened.entry
    if not opened.created:
        return _replay(entry, key, prepared)
    if approval is not None:
        envelope = pending_approval_envelope(call_id=call.call_id, execution_id=str(entry.pk))
        return Outcome(call=call, version=version, envelope=envelope, execution_id=str(entry.pk))
    if not run_async:
        return execute_entry(
            entry=entry, request=_execution_request(principal, options, prepared, key), prepared=prepared
        )
    _enqueue(entry, call)
    if options.wait_s > 0:
        entry = _wait_for_outcome(entry.pk, options.wait_s)
        if entry.state != LedgerState.INTENT:
            return Outcome(
                call=call,
                version=version,
                envelope=execution_envelope(entry=entry),
                execution_id=str(entry.pk),
            )
    envelope = accepted_envelope(call_id=call.call_id, execution_id=str(entry.pk))
    return Outcome(call=call, version=version, envelope=envelope, execution_id=str(entry.pk))


def _enqueue(entry: LedgerEntry, call: ToolCall) -> None:
    """Hand an intent to the workers; if the broker refuses, nothing will run: say so."""
    from .tasks import execute_entry_task

    try:
        execute_entry_task.delay(str(entry.pk))
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
        entry = LedgerEntry.objects.select_related("version__tool").get(pk=entry_id)
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
    entry = LedgerEntry.objects.select_related("version__tool", "tenant", "tool").filter(pk=entry_id).first()
    if entry is None or entry.state != LedgerState.INTENT:
        return
    approval = Approval.objects.filter(entry_id=entry.pk).values_list("status", flat=True).first()
    if approval not in (None, ApprovalStatus.APPROVED):
        return
    if not ledger_claim(entry_id=entry.pk):
        return
    version = VersionSpec.from_model(entry.version)
    prepared = PreparedCall(
        call=ToolCall(call_id=entry.call_id, name=version.tool_name, arguments=entry.arguments),
        version=version,
        arguments=entry.arguments,
        args_hash=entry.args_hash,
        subject=entry.subject,
    )
    execute_entry(entry=entry, request=execution_request_for(entry), prepared=prepared)


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
        error = _uncertain(
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


def _dry_run_envelope(
    prepared: PreparedCall, principal: AgentPrincipal, options: InvokeOptions
) -> dict[str, Any]:
    version = prepared.version
    would_run = {
        "executor": version.executor,
        "side_effect": version.side_effect,
        "mode": version.mode,
        "timeout_s": version.timeout_s,
        "arguments": thaw(prepared.arguments),
        "args_hash": prepared.args_hash,
    }
    if version.is_write:
        would_run["idempotency_key"] = idempotency_key(
            tenant_slug=principal.tenant_slug,
            task_id=options.task_id,
            call_id=prepared.call.call_id,
            tool=version.tool_name,
            args_hash=prepared.args_hash,
        )
    return {
        "status": "ok",
        "call_id": prepared.call.call_id,
        "tool": version.tool_name,
        "version": version.number,
        "dry_run": True,
        "data": {"would_run": would_run},
        "cached": False,
        "truncated": None,
        "execution_id": None,
    }


@metrics.timed(metrics.SHAPING)
def finish(outcome: Outcome, *, budget_chars: int | None = None) -> dict[str, Any]:
    """The envelope the model reads: shaped result, or the envelope decided earlier."""
    if outcome.envelope is not None:
        return outcome.envelope
    version = outcome.version
    assert version is not None
    return result_envelope(
        call_id=outcome.call.call_id,
        version=version,
        shaped=shape_result(outcome.result, version=version, budget_chars=budget_chars),
        cached=outcome.cached,
        execution_id=outcome.execution_id,
    )


def _log(
    principal: AgentPrincipal,
    options: InvokeOptions,
    outcome: Outcome,
    envelope: dict[str, Any],
    started: float,
) -> None:
    arguments = outcome.call.arguments
    invocation_record(
        tenant_id=principal.tenant_id,
        agent_id=principal.agent_id,
        task_id=options.task_id,
        call_id=outcome.call.call_id,
        tool_name=outcome.call.name[:200],
        version_number=outcome.version.number if outcome.version else None,
        status=envelope.get("status", ""),
        kind=envelope.get("kind", ""),
        latency_ms=(time.perf_counter() - started) * 1000,
        args_chars=len(arguments) if isinstance(arguments, str) else len(json.dumps(arguments, default=str)),
        result_chars=len(json.dumps(envelope.get("data"), default=str)) if "data" in envelope else 0,
        execution_id=outcome.execution_id,
        dry_run=options.dry_run,
        envelope=envelope,
    )


def invoke_calls(
    *,
    principal: AgentPrincipal,
    session_token: str | None,
    options: InvokeOptions,
    calls: Sequence[ToolCall],
    budget_chars: int | None = None,
) -> list[dict[str, Any]]:
    """Run the calls of one model turn; envelopes in the calls' order, call ids matched.

    Readonly and recomputable calls execute concurrently; writes one at a time in order.
    A batch budget is shared among the results: larger results are truncated more, none
    is dropped.
    """
    started = time.perf_counter()
    now = timezone.now()
    prepared: list[PreparedCall | Outcome] = []
    for call in calls:
        try:
            session = _session(session_token, principal, now)
            prepared.append(
                prepare_call(principal=principal, session=session, options=options, call=call, now=now)
            )
        except ToolHubError as error:
            if isinstance(error, UnknownToolError):
                capability_note_unknown_tool(principal=principal, options=options, call=call)
            prepared.append(
                Outcome(call=call, envelope=error.as_envelope(call_id=call.call_id, tool=call.name))
            )
    if options.dry_run:
        outcomes = [
            p
            if isinstance(p, Outcome)
            else Outcome(call=p.call, version=p.version, envelope=_dry_run_envelope(p, principal, options))
            for p in prepared
        ]
    else:
        outcomes = _execute_all(principal, options, prepared)
    envelopes = _finish_all(outcomes, budget_chars)
    for outcome, envelope in zip(outcomes, envelopes, strict=True):
        _log(principal, options, outcome, envelope, started)
        metrics.invocation_observed(
            tool=outcome.version.tool_name if outcome.version else outcome.call.name,
            envelope=envelope,
            started=started,
        )
    return envelopes


def _execute_all(
    principal: AgentPrincipal, options: InvokeOptions, prepared: list[PreparedCall | Outcome]
) -> list[Outcome]:
    """Reads concurrently (when there are several), writes one by one in the calls' order."""
    reads = [
        i for i, p in enumerate(prepared) if isinstance(p, PreparedCall) and not needs_ledger(p, options)
    ]
    futures = {}
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
        elif needs_ledger(p, options):
            outcomes[i] = run_ledgered(principal=principal, options=options, prepared=p)
        else:
            outcomes[i] = run_readonly(principal=principal, options=options, prepared=p)
    for i, future in futures.items():
        outcomes[i] = future.result()
    return [outcomes[i] for i in range(len(prepared))]


def _finish_all(outcomes: list[Outcome], budget_chars: int | None) -> list[dict[str, Any]]:
    if budget_chars is None:
        return [finish(o) for o in outcomes]
    sizes = [json_size(o.result) if o.has_result else 0 for o in outcomes]
    allowances = allot_budget(sizes, budget_chars)
    return [finish(o, budget_chars=a or None) for o, a in zip(outcomes, allowances, strict=True)]


MIN_ALLOWANCE_CHARS = 200


def allot_budget(sizes: Sequence[int], budget: int) -> list[int]:
    """Share a character budget among results (0 = no result to shape).

    Water-filling: results smaller than an equal share keep all they need, and what they
    leave is shared among the larger ones; nobody gets less than MIN_ALLOWANCE_CHARS, so a
    result is truncated harder but never dropped.
    """
    allowances = [0] * len(sizes)
    pending = sorted((size, index) for index, size in enumerate(sizes) if size > 0)
    remaining = budget
    for position, (size, index) in enumerate(pending):
        share = remaining // (len(pending) - position)
        allowances[index] = min(size, max(share, MIN_ALLOWANCE_CHARS))
        remaining = max(remaining - allowances[index], 0)
    return allowances


def invoke_one(
    *, principal: AgentPrincipal, session_token: str | None, options: InvokeOptions, call: ToolCall
) -> dict[str, Any]:
    """One call through the whole pipeline (POST /api/v1/invoke)."""
    return invoke_calls(principal=principal, session_token=session_token, options=options, calls=[call])[0]


def _session(token: str | None, principal: AgentPrincipal, now: datetime) -> SessionClaims | None:
    """The end user of these calls; a bad token refuses every call (ForbiddenError)."""
    if not token:
        return None
    return verify_session(token, tenant_id=principal.tenant_id, agent_id=principal.agent_id, now=now)


def execution_envelope(*, entry: LedgerEntry) -> dict[str, Any]:
    """The envelope of an execution as it stands now (GET /api/v1/executions/{id})."""
    version = VersionSpec.from_model(entry.version)
    call = ToolCall(call_id=entry.call_id, name=version.tool_name, arguments=entry.arguments)
    if entry.state == LedgerState.COMMITTED:
        return finish(Outcome(call=call, version=version, result=entry.result, execution_id=str(entry.pk)))
    if entry.state == LedgerState.FAILED:
        return {**(entry.error or {}), "execution_id": str(entry.pk)}
    if entry.state == LedgerState.INTENT and _awaits_approval(entry):
        return pending_approval_envelope(call_id=entry.call_id, execution_id=str(entry.pk))
    if entry.state == LedgerState.INTENT:
        return accepted_envelope(call_id=entry.call_id, execution_id=str(entry.pk), poll=_poll_path(entry.pk))
    return _uncertain(
        OutcomeUnknownError, "The outcome of this call is still unknown.", entry.pk
    ).as_envelope(call_id=entry.call_id, tool=version.tool_name)


def _awaits_approval(entry: LedgerEntry) -> bool:
    return Approval.objects.filter(entry_id=entry.pk, status=ApprovalStatus.PENDING).exists()
