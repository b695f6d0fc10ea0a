"""The `sandbox` executor: the code of a run_python call, run isolated (runs.py), every tool
call it makes answered through ToolHub's pipeline (hooks.py), and what it ended in as a
result or as an error the model can act on.

A run changes nothing by itself: whatever it does outside goes through its inner calls,
each with a ledger entry of its own when it writes. So a run that ends early (an exception,
a limit) is a definite failure of the run, recorded as `failed`, while the writes it made
before stay committed in their own entries. A run whose worker died mid-way is `unknown`
and goes to triage: which of its calls ran is in its inner entries and log, but what it
would have answered nobody can say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from apps.common.errors import (
    BusinessRuleError,
    InvalidArgsError,
    ToolHubError,
    ToolTimeoutError,
    UnavailableError,
)

from ..base import ExecutionRejected, ExecutionRequest, ReconcileAnswer
from .hooks import run_calls
from .runs import RunLimits, RunReport, SandboxUnavailable, run_code

# The defaults are the most a version may allow: its executor_config can only lower them.
DEFAULT_LIMITS = RunLimits()
LIMIT_FIELDS = {
    "wall_s": ("number", 1),
    "cpu_s": ("integer", 1),
    "memory_mb": ("integer", 64),
    "max_calls": ("integer", 0),
    "max_stdout_bytes": ("integer", 0),
}
CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        name: {"type": kind, "minimum": low, "maximum": getattr(DEFAULT_LIMITS, name)}
        for name, (kind, low) in LIMIT_FIELDS.items()
    },
    "additionalProperties": False,
}


def run_limits(config: Mapping[str, Any], timeout_s: float) -> RunLimits:
    """The version's limits: its config's lower values, and no longer than its timeout."""
    limits = replace(DEFAULT_LIMITS, **{name: config[name] for name in LIMIT_FIELDS if name in config})
    return replace(limits, wall_s=min(limits.wall_s, timeout_s))


def run_sandbox(request: ExecutionRequest) -> dict[str, Any]:
    """Run the call's code; its result, or ExecutionRejected with what stopped it."""
    if request.tenant_id is None or request.agent_id is None:
        raise ExecutionRejected(
            UnavailableError(
                "A code run must belong to an agent: its code calls tools as that agent.",
                hint="Nothing ran. Call run_python through ToolHub's invoke API.",
            )
        )
    limits = run_limits(request.config, request.timeout_s)
    try:
        calls = run_calls(request)
    except ToolHubError as refused:
        raise ExecutionRejected(refused) from None
    try:
        report = run_code(
            str(request.arguments.get("code", "")),
            tool_names=calls.tool_names,
            limits=limits,
            call_tool=calls.call,
        )
    except SandboxUnavailable as exc:
        raise ExecutionRejected(
            UnavailableError(
                f"Code runs are not available on this installation: {exc}",
                hint="Nothing ran. Call the tools one by one instead, and tell the operators.",
            )
        ) from None
    if report.status == "ok":
        return {"result": report.result, "stdout": report.stdout, "calls": report.calls}
    raise ExecutionRejected(run_error(report, limits))


def run_error(report: RunReport, limits: RunLimits) -> ToolHubError:
    """What the model reads of a run that did not finish: what stopped it, what to change,
    and what it printed and called before (`raw`)."""
    raw = {"stdout": report.stdout, "calls": report.calls}
    made = _calls_made(report.calls)
    if report.status == "error":
        last = report.traceback.strip().splitlines()[-1] if report.traceback.strip() else report.detail
        return InvalidArgsError(
            f"The code raised an exception: {last}",
            hint=f"Fix the code and run it again with a new call id. {made}",
            extra={"raw": {**raw, "traceback": report.traceback}},
        )
    limit = report.limit
    raw["limit"] = limit
    if limit in ("wall_s", "cpu_s"):
        spent = f"{limits.wall_s:g} s in all" if limit == "wall_s" else f"{limits.cpu_s} s of CPU time"
        return ToolTimeoutError(
            f"The code was stopped after {spent}, the most a run may take.",
            hint="Do not run the same code again as it is: make it do less (fewer items, fewer "
            f"calls, no endless loop), or do the work in steps. {made}",
            extra={"raw": raw},
        )
    if limit == "max_calls":
        return BusinessRuleError(
            f"The code made more than {limits.max_calls} tool calls, the most a run may make; "
            "it was stopped at the next one.",
            hint=f"Ask for more per call (a larger limit, a wider range) or split the work into "
            f"several runs. {made}",
            extra={"raw": raw},
        )
    problems = {
        "memory_mb": f"The code used more than {limits.memory_mb} MB of memory, the most a run may use.",
        "max_stdout_bytes": f"The code printed more than {limits.max_stdout_bytes} bytes, the most a run "
        "may print; the first of them are in raw.stdout.",
        "max_result_bytes": f"The code's result is larger than {limits.max_result_bytes} bytes, the most "
        "a run may return.",
    }
    fixes = {
        "memory_mb": "Keep less in memory (process items as they come, do not build large lists).",
        "max_stdout_bytes": "Print less: a summary, not every item; put what you need in `result`.",
        "max_result_bytes": "Return a summary (totals, counts, the first items), not every item.",
    }
    message = problems.get(limit, f"The code's process ended abnormally: {report.detail}")
    fix = fixes.get(limit, "Do not use what the sandbox does not offer (processes, native code).")
    return InvalidArgsError(message, hint=f"{fix} {made}", extra={"raw": raw})


def _calls_made(count: int) -> str:
    if not count:
        return "It made no tool call."
    return (
        f"It made {count} tool call{'s' if count != 1 else ''} before it stopped: those ran, "
        "and any write among them happened, so do not make them again."
    )


def reconcile_sandbox(request: ExecutionRequest) -> ReconcileAnswer:
    """A run left `unknown` (its worker died): nobody can ask what it would have answered,
    so an operator settles it, with its inner calls in view (each write an entry of its own)."""
    return ReconcileAnswer(
        found=None,
        note="a code run that did not finish cannot be asked about; the writes it made are entries "
        "of their own, listed under the run",
        retry=False,
    )
