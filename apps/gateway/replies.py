"""The one place an outcome becomes what the model reads (contract §3): shaped results
sharing a batch's budget, errors, polls, replays and dry runs, as envelopes or as the text
the vendor adapters and MCP hand the model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from apps.common.errors import ToolHubError
from apps.ledger.models import LedgerEntry

from . import metrics
from .contracts import Executed, FailedBefore, Outcome, Pending, Refused, VersionSpec, WouldRun, thaw
from .envelopes import accepted_envelope, json_size, pending_approval_envelope, result_envelope, shape_result
from .replays import entry_outcome, poll_path

MIN_ALLOWANCE_CHARS = 200


def error_envelope(error: ToolHubError, *, call_id: str | None, tool: str | None = None) -> dict[str, Any]:
    """An error as the model reads it (and as the ledger stores a failed call's answer)."""
    return error.as_envelope(call_id=call_id, tool=tool)


def execution_envelope(*, entry: LedgerEntry) -> dict[str, Any]:
    """The envelope of an execution as it stands now (GET /api/v1/executions/{id})."""
    return render(entry_outcome(entry))


def envelope_text(envelope: dict[str, Any]) -> str:
    """The envelope as the model reads it in a vendor's message or an MCP result: compact JSON."""
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"), default=str)


@metrics.timed(metrics.SHAPING)
def render(outcome: Outcome, *, budget_chars: int | None = None) -> dict[str, Any]:
    """The envelope of one outcome; a result is shaped to the version's limit or the budget."""
    answer, call_id, version = outcome.answer, outcome.call.call_id, outcome.version
    tool = version.tool_name if version is not None else outcome.call.name
    if isinstance(answer, Executed):
        assert version is not None
        return result_envelope(
            call_id=call_id,
            version=version,
            shaped=shape_result(answer.result, version=version, budget_chars=budget_chars),
            cached=answer.cached,
            execution_id=outcome.execution_id,
        )
    if isinstance(answer, Refused):
        return error_envelope(answer.error, call_id=call_id, tool=tool)
    if isinstance(answer, FailedBefore):
        if answer.replayed:
            return {**answer.error, "call_id": call_id, "cached": True}
        return {**answer.error, "execution_id": outcome.execution_id}
    if isinstance(answer, Pending):
        if answer.awaiting_approval:
            return pending_approval_envelope(call_id=call_id, execution_id=outcome.execution_id)
        return accepted_envelope(
            call_id=call_id, execution_id=outcome.execution_id, poll=poll_path(outcome.execution_id)
        )
    assert version is not None
    return {
        "status": "ok",
        "call_id": call_id,
        "tool": tool,
        "version": version.number,
        "dry_run": True,
        "data": {"would_run": _would_run(answer, version)},
        "cached": False,
        "truncated": None,
        "execution_id": None,
    }


def _would_run(answer: WouldRun, version: VersionSpec) -> dict[str, Any]:
    would_run = {
        "executor": version.executor,
        "side_effect": version.side_effect,
        "mode": version.mode,
        "timeout_s": version.timeout_s,
        "arguments": thaw(answer.arguments),
        "args_hash": answer.args_hash,
    }
    if answer.idempotency_key is not None:
        would_run["idempotency_key"] = answer.idempotency_key
    return would_run


def render_all(outcomes: Sequence[Outcome], budget_chars: int | None) -> list[dict[str, Any]]:
    """Every call's envelope; a batch budget is shared among the results (allot_budget)."""
    if budget_chars is None:
        return [render(o) for o in outcomes]
    sizes = [json_size(o.answer.result) if isinstance(o.answer, Executed) else 0 for o in outcomes]
    allowances = allot_budget(sizes, budget_chars)
    return [render(o, budget_chars=a or None) for o, a in zip(outcomes, allowances, strict=True)]


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
