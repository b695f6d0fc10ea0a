"""The invoke path's orchestration: validate every call of a model turn, run them, answer.

    validation.prepare_call   the pure pipeline (pipeline/validate.py) and the task's counters
    execution.execute_all     each call as pipeline/plan.py decides: direct read, or under the
                              ledger, in the request or on a worker (executors never run
                              inside a database transaction)
    replies.render_all        the one place outcomes become envelopes: shaped results
                              sharing the batch's budget, errors, polls, replays, dry runs

Every outcome is an envelope (contract §3); every call is written to the invocation log.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone

from apps.audit.invocation_log import invocation_record
from apps.common.capability_hooks import capability_recorder
from apps.common.errors import ToolHubError, UnknownToolError
from apps.tenancy.authentication import AgentPrincipal, key_confirmed
from apps.tenancy.sessions import SessionClaims, verify_session

from . import metrics
from .contracts import InvokeOptions, Outcome, PreparedCall, Refused, ToolCall
from .execution import dry_run, execute_all
from .replies import render_all
from .selectors import agent_catalog
from .validation import prepare_call

__all__ = ["InvokeOptions", "invoke_as", "invoke_calls", "invoke_one"]


def invoke_one(
    *, principal: AgentPrincipal, session_token: str | None, options: InvokeOptions, call: ToolCall
) -> dict[str, Any]:
    """One call through the whole pipeline (POST /api/v1/invoke)."""
    return invoke_calls(principal=principal, session_token=session_token, options=options, calls=[call])[0]


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
    now = timezone.now()
    try:
        session: SessionClaims | ToolHubError | None = _session(session_token, principal, now)
    except ToolHubError as error:
        session = error
    return invoke_as(
        principal=principal, session=session, options=options, calls=calls, budget_chars=budget_chars
    )


def invoke_as(
    *,
    principal: AgentPrincipal,
    session: SessionClaims | ToolHubError | None,
    options: InvokeOptions,
    calls: Sequence[ToolCall],
    budget_chars: int | None = None,
) -> list[dict[str, Any]]:
    """`invoke_calls` for an end user already known: the session's claims, or the error that
    refuses every call (a bad token). A code run's inner calls come this way, in the run's
    session."""
    started = time.perf_counter()
    now = timezone.now()
    prepared: list[PreparedCall | Outcome] = []
    unknown: list[ToolCall] = []
    for call in calls:
        try:
            if isinstance(session, ToolHubError):
                raise session
            prepared.append(
                prepare_call(principal=principal, session=session, options=options, call=call, now=now)
            )
        except ToolHubError as error:
            if isinstance(error, UnknownToolError) and not options.dry_run:
                unknown.append(call)
            prepared.append(Outcome(call=call, answer=Refused(error)))
    # Nothing is written before a key taken on trust is known to be as remembered.
    key_confirmed(principal)
    for call in unknown:
        _note_unknown_tool(principal, options, call)
    return _answer(principal, options, prepared, budget_chars, started)


def _answer(
    principal: AgentPrincipal,
    options: InvokeOptions,
    prepared: list[PreparedCall | Outcome],
    budget_chars: int | None,
    started: float,
) -> list[dict[str, Any]]:
    """Run (or dry-run) the prepared calls, render and log every outcome."""
    if options.dry_run:
        slug, task_id = principal.tenant_slug, options.task_id
        outcomes = [
            p if isinstance(p, Outcome) else dry_run(p, tenant_slug=slug, task_id=task_id) for p in prepared
        ]
    else:
        outcomes = execute_all(principal, options, prepared)
    envelopes = render_all(outcomes, budget_chars)
    for outcome, envelope in zip(outcomes, envelopes, strict=True):
        _log(principal, options, outcome, envelope, started)
        metrics.invocation_observed(
            tool=outcome.version.tool_name if outcome.version else outcome.call.name,
            envelope=envelope,
            started=started,
        )
    return envelopes


def _session(token: str | None, principal: AgentPrincipal, now: datetime) -> SessionClaims | None:
    """The end user of these calls; a bad token refuses every call (ForbiddenError)."""
    if not token:
        return None
    return verify_session(token, tenant_id=principal.tenant_id, agent_id=principal.agent_id, now=now)


def _note_unknown_tool(principal: AgentPrincipal, options: InvokeOptions, call: ToolCall) -> None:
    """Tell the capability recorder what the agent could not call (apps/common/capability_hooks.py)."""
    catalog = agent_catalog(
        tenant_id=principal.tenant_id, agent_id=principal.agent_id, generation=principal.catalog_generation
    )
    capability_recorder().unknown_tool_called(
        tenant_id=principal.tenant_id,
        agent_name=principal.agent_name,
        task_id=options.task_id,
        call_id=call.call_id,
        tool=call.name,
        toolset=options.toolset or "",
        phase=options.phase or "",
        arguments=call.arguments,
        elsewhere=call.name in catalog.callable,
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
        parent_execution_id=options.parent_execution_id,
        dry_run=options.dry_run,
        envelope=envelope,
    )
