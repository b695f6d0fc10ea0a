"""Prepare a call: the validation layer around the pure pipeline, with the task's counters.

Loads what the pure stages take (the agent's catalog, memoized per catalog generation; the
call's context), runs `pipeline.validate_call`, reads the task's counters (one cache round
trip, which also reads the upstreams' generation for a tool that calls one, so that its
executor makes none) and, for a new call whose rules limit a field by state, that state
(apps/gateway/state.py), then `pipeline.admit_call`; a refusal after the counters were
touched undoes them. So a rule about state refuses a call before its ledger entry, and
before any approval is asked for.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from django.conf import settings

from apps.common.errors import ToolHubError, UnknownToolError
from apps.tenancy.authentication import AgentPrincipal
from apps.tenancy.sessions import SessionClaims

from . import counters, metrics
from .contracts import CallContext, CallState, InvokeOptions, PreparedCall, ToolCall
from .pipeline.rules import history_needed
from .pipeline.validate import admit_call, validate_call
from .selectors import agent_catalog, opened_to_task
from .state import read_call_state


@metrics.timed(metrics.VALIDATION)
def prepare_call(
    *,
    principal: AgentPrincipal,
    session: SessionClaims | None,
    options: InvokeOptions,
    call: ToolCall,
    now: datetime,
) -> PreparedCall:
    """Every check that can refuse a call before anything runs.

    Reads only the catalog (memoized), the task counters and what the version's state
    readers read; raises the ToolHubError the model should see. Counts the call for loop,
    budget and quota checks unless dry_run.
    """
    catalog = agent_catalog(
        tenant_id=principal.tenant_id, agent_id=principal.agent_id, generation=principal.catalog_generation
    )
    context = CallContext(
        tenant_id=principal.tenant_id,
        tenant_slug=principal.tenant_slug,
        agent_id=principal.agent_id,
        task_id=options.task_id,
        now=now,
        session=session,
    )
    try:
        prepared = validate_call(
            catalog=catalog, call=call, context=context, toolset=options.toolset, phase=options.phase
        )
    except UnknownToolError:
        # Not offered here: request_capability may have opened it to this task. Read only
        # now, so a call of a tool in its place pays nothing for openings.
        opened = opened_to_task(catalog, principal=principal, task_id=options.task_id, name=call.name)
        if not opened:
            raise
        prepared = validate_call(
            catalog=catalog, call=call, context=context, toolset=options.toolset, phase=options.phase,
            opened=opened,
        )
    version = prepared.version
    needs = history_needed(version, prepared.policy)
    sighting = counters.see_call(
        tenant_id=principal.tenant_id,
        agent_id=principal.agent_id,
        task_id=options.task_id,
        call=prepared,
        needs=needs,
        required_tools=[r["tool"] for r in version.rules if r.get("type") == "requires_earlier_call"],
        now=now,
        dry_run=options.dry_run,
        key_check=principal.key_check,
    )
    try:
        state = read_call_state(prepared, context) if sighting.first_sight else CallState()
        admitted = admit_call(
            prepared,
            context=context,
            sighting=sighting,
            state=state,
            default_rate_limit=settings.TOOLHUB_DEFAULT_RATE_LIMIT_PER_MINUTE,
            dry_run=options.dry_run,
        )
    except ToolHubError:
        if sighting.first_sight and not options.dry_run:
            counters.forget_call(
                tenant_id=principal.tenant_id, task_id=options.task_id, call=prepared, needs=needs, now=now
            )
        raise
    if sighting.upstream_generation is None:
        return admitted
    return replace(admitted, upstream_generation=sighting.upstream_generation)
