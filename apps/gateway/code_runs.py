"""A code run's tool calls: each one a call of the agent's own, through the whole pipeline.

The sandbox executor (executors/sandbox/) runs run_python's code and hands every call the
code makes to `run_calls`, registered when the app is ready. A call runs as the agent that
started the run, in the same task, toolset and phase, for the same end user (the session's
subject and attributes, kept on the run's ledger entry), so normalization, the schema,
grants and bindings, business rules, rate limits, budgets, loop detection, approvals and
the ledger apply exactly as to a call the model made itself; identity comes from that
session, never from the code. Each call is logged with the run's execution as its parent,
and a write's ledger entry names the run's entry.

Exactly once: the call id of the n-th call is `{run's call id}#{n}`, or
`{run's call id}#{call_id}` when the code names it, so a run executed again under the same
key (a redelivered task, the sweeper's retry) meets the ledger's entries of its first
execution and repeats no write.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.utils import timezone

from apps.common.errors import ForbiddenError
from apps.tenancy.authentication import AgentPrincipal
from apps.tenancy.selectors import active_agent
from apps.tenancy.sessions import SessionClaims

from .agent_catalogs import code_run_tools
from .contracts import InvokeOptions, ToolCall
from .executors.base import ExecutionRequest
from .executors.sandbox.hooks import RunCalls
from .executors.sandbox.runs import InnerCall
from .selectors import visible_tools
from .services import invoke_as

INNER_CALL_SEPARATOR = "#"


def inner_call_id(run_call_id: str, inner: InnerCall) -> str:
    """The call id of a run's inner call: the run's, then the code's own name or the call's number."""
    return f"{run_call_id}{INNER_CALL_SEPARATOR}{inner.call_id or inner.number}"


def run_calls(request: ExecutionRequest) -> RunCalls:
    """The tools the run's code may call now, and how it calls them. Raises the ToolHubError
    that refuses the whole run when its agent was deactivated, or its toolset or phase is
    gone, since it was called."""
    agent = active_agent(tenant_id=request.tenant_id or 0, agent_id=request.agent_id or 0)
    if agent is None:
        raise ForbiddenError(
            "The agent that started this run is no longer active, so its code cannot call tools.",
            hint="Nothing ran. Tell the user the action cannot be done now.",
        )
    principal = AgentPrincipal(
        agent_id=agent.pk,
        agent_name=agent.name,
        tenant_id=agent.tenant_id,
        tenant_slug=agent.tenant.slug,
        key_id=0,
    )
    visible = visible_tools(
        tenant_id=agent.tenant_id, agent_id=agent.pk, toolset=request.toolset, phase=request.phase
    )
    session = _session(request)
    options = InvokeOptions(
        task_id=request.task_id,
        toolset=request.toolset,
        phase=request.phase,
        parent_execution_id=request.execution_id,
    )

    # The sandbox hands over only calls of `tool_names` (runs.py refuses others, ending the run).
    def call(inner: InnerCall) -> Mapping[str, Any]:
        tool_call = ToolCall(
            call_id=inner_call_id(request.call_id, inner), name=inner.tool, arguments=inner.arguments
        )
        return invoke_as(principal=principal, session=session, options=options, calls=[tool_call])[0]

    return RunCalls(tool_names=tuple(sorted(code_run_tools(visible))), call=call)


def _session(request: ExecutionRequest) -> SessionClaims | None:
    """The run's end user, as the run's own call had it verified; None when it had none."""
    if not request.subject or request.tenant_id is None or request.agent_id is None:
        return None
    return SessionClaims(
        tenant_id=request.tenant_id,
        agent_id=request.agent_id,
        subject=request.subject,
        attributes=dict(request.session_attributes),
        # Only the run's own lifetime: the token was checked when the run was called.
        expires_at=timezone.now() + timedelta(seconds=max(request.timeout_s, 1)),
    )
