"""What the model reads when no executor answers now: replays, dry runs, an execution's
envelope as it stands, and results shaped to share a batch's budget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from apps.common.errors import (
    IdempotencyConflictError,
    InProgressError,
    OutcomeUnknownError,
    ToolHubError,
)
from apps.ledger.models import LedgerEntry, LedgerState
from apps.ledger.selectors import approval_is_pending

from . import metrics
from .contracts import Outcome, PreparedCall, ToolCall, VersionSpec, thaw
from .envelopes import accepted_envelope, json_size, pending_approval_envelope, result_envelope, shape_result
from .pipeline.plan import idempotency_key

MIN_ALLOWANCE_CHARS = 200


def poll_path(execution_id: Any) -> str:
    return f"/api/v1/executions/{execution_id}"


def uncertain(error_cls: type[ToolHubError], message: str, execution_id: Any) -> ToolHubError:
    """The error of a call whose side effect may have happened: never invites a retry."""
    return error_cls(
        message,
        hint="The outcome is unknown and is being checked with the external system. Do not call "
        "again: a second call could repeat the side effect. Tell the user the result is pending; "
        f"its status is at GET {poll_path(execution_id)}.",
        extra={"execution_id": str(execution_id), "poll": poll_path(execution_id)},
    )


def replay(entry: LedgerEntry, key: str, prepared: PreparedCall) -> Outcome:
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
    if entry.state == LedgerState.INTENT and approval_is_pending(entry_id=entry.pk):
        envelope = pending_approval_envelope(call_id=call.call_id, execution_id=str(entry.pk))
        return Outcome(call=call, version=version, envelope=envelope, execution_id=str(entry.pk))
    if entry.state == LedgerState.INTENT:
        wait = max(1, round(version.timeout_s))
        error = InProgressError(
            "This exact call is executing right now.",
            hint=f"Wait {wait} s and send the same call (same call id) again to get its result; "
            "do not send it with a new call id.",
            retry_after_s=wait,
            extra={"execution_id": str(entry.pk), "poll": poll_path(entry.pk)},
        )
    else:
        error = uncertain(
            OutcomeUnknownError, "This call was made before and its outcome is still unknown.", entry.pk
        )
    return Outcome(
        call=call,
        version=version,
        envelope=error.as_envelope(call_id=call.call_id, tool=version.tool_name),
        execution_id=str(entry.pk),
    )


def execution_envelope(*, entry: LedgerEntry) -> dict[str, Any]:
    """The envelope of an execution as it stands now (GET /api/v1/executions/{id})."""
    version = VersionSpec.from_model(entry.version)
    call = ToolCall(call_id=entry.call_id, name=version.tool_name, arguments=entry.arguments)
    if entry.state == LedgerState.COMMITTED:
        return finish(Outcome(call=call, version=version, result=entry.result, execution_id=str(entry.pk)))
    if entry.state == LedgerState.FAILED:
        return {**(entry.error or {}), "execution_id": str(entry.pk)}
    if entry.state == LedgerState.INTENT and approval_is_pending(entry_id=entry.pk):
        return pending_approval_envelope(call_id=entry.call_id, execution_id=str(entry.pk))
    if entry.state == LedgerState.INTENT:
        return accepted_envelope(call_id=entry.call_id, execution_id=str(entry.pk), poll=poll_path(entry.pk))
    return uncertain(OutcomeUnknownError, "The outcome of this call is still unknown.", entry.pk).as_envelope(
        call_id=entry.call_id, tool=version.tool_name
    )


def dry_run_envelope(prepared: PreparedCall, *, tenant_slug: str, task_id: str) -> dict[str, Any]:
    """What would run, and under which key: the validation layer passed, nothing ran."""
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
            tenant_slug=tenant_slug,
            task_id=task_id,
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


def finish_all(outcomes: Sequence[Outcome], budget_chars: int | None) -> list[dict[str, Any]]:
    """Every call's envelope; a batch budget is shared among the results (allot_budget)."""
    if budget_chars is None:
        return [finish(o) for o in outcomes]
    sizes = [json_size(o.result) if o.has_result else 0 for o in outcomes]
    allowances = allot_budget(sizes, budget_chars)
    return [finish(o, budget_chars=a or None) for o, a in zip(outcomes, allowances, strict=True)]


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
