"""What a call the ledger already holds answers (contract §5): a key sent again, and an
execution as it stands when its client polls. Decides the outcome; replies.py renders it."""

from __future__ import annotations

from typing import Any

from apps.common.errors import IdempotencyConflictError, InProgressError, OutcomeUnknownError, ToolHubError
from apps.ledger.models import LedgerEntry, LedgerState
from apps.ledger.selectors import approval_is_pending

from .contracts import Executed, FailedBefore, Outcome, Pending, PreparedCall, Refused, ToolCall, VersionSpec


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
    """The answer to a call id already recorded in this task."""
    call, version = prepared.call, prepared.version
    if entry.key != key or entry.subject != prepared.subject:
        # Never another call's result: not for other arguments, and not for another end user.
        conflict = IdempotencyConflictError(
            f"call id {call.call_id!r} was already used in this task for another tool, other "
            "arguments or another end user.",
            hint="Give every new call its own call id; reuse a call id only to repeat exactly the same "
            "call for the same user.",
        )
        return Outcome(call=call, version=version, answer=Refused(conflict))
    if entry.state == LedgerState.INTENT and not approval_is_pending(entry=entry):
        wait = max(1, round(version.timeout_s))
        in_progress = InProgressError(
            "This exact call is executing right now.",
            hint=f"Wait {wait} s and send the same call (same call id) again to get its result; "
            "do not send it with a new call id.",
            retry_after_s=wait,
            extra={"execution_id": str(entry.pk), "poll": poll_path(entry.pk)},
        )
        return Outcome(call=call, version=version, answer=Refused(in_progress), execution_id=str(entry.pk))
    unknown = "This call was made before and its outcome is still unknown."
    return _as_recorded(entry, call, version, replayed=True, unknown=unknown)


def entry_outcome(entry: LedgerEntry) -> Outcome:
    """An execution as it stands now (GET /api/v1/executions/{id})."""
    version = VersionSpec.from_model(entry.version)
    call = ToolCall(call_id=entry.call_id, name=version.tool_name, arguments=entry.arguments)
    if entry.state == LedgerState.INTENT and not approval_is_pending(entry=entry):
        return Outcome(call=call, version=version, answer=Pending(), execution_id=str(entry.pk))
    return _as_recorded(
        entry, call, version, replayed=False, unknown="The outcome of this call is still unknown."
    )


def _as_recorded(
    entry: LedgerEntry, call: ToolCall, version: VersionSpec, *, replayed: bool, unknown: str
) -> Outcome:
    """What the entry's state says, for a settled entry, an unknown one or one awaiting approval."""
    execution_id = str(entry.pk)
    answer: Executed | FailedBefore | Pending | Refused
    if entry.state == LedgerState.COMMITTED:
        answer = Executed(entry.result, cached=replayed)
    elif entry.state == LedgerState.FAILED:
        answer = FailedBefore(entry.error or {}, replayed=replayed)
    elif entry.state == LedgerState.INTENT:
        answer = Pending(awaiting_approval=True)
    else:
        answer = Refused(uncertain(OutcomeUnknownError, unknown, entry.pk))
    return Outcome(call=call, version=version, answer=answer, execution_id=execution_id)
