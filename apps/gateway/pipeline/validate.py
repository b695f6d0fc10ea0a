"""The validation layer, in order: from the model's call to a PreparedCall or a typed error.

    resolve the tool (tool_lookup) → parse → drop optional nulls → normalize → schema →
    authorize (bindings) → argument rules → args_hash and approval reason    validate_call()
      ── the gateway reads the task's counters (one cache round trip) and the state
         its state_limit rules read (apps/gateway/state.py) here ──
    state rules → loop guard (a first sight only) → rate limit               admit_call()

Both halves are pure: they take the preloaded catalog, the call, its context and, for the
second, what the counters said (a TaskSighting), and return a value or raise the ToolHubError
the model should see. The counters need the cache, so they stay outside, between the two.
"""

from __future__ import annotations

from dataclasses import replace

from apps.common.schemas.nulls import strip_optional_nulls
from apps.gateway.agent_catalogs import AgentCatalog
from apps.gateway.contracts import CallContext, CallState, PreparedCall, TaskSighting, ToolCall

from .approval import approval_reason
from .authorize import apply_bindings
from .guards import check_loop, check_rate
from .normalize import args_hash, normalize_arguments
from .parse import parse_arguments
from .rules import check_argument_rules, check_state_rules
from .schema import validate_arguments
from .tool_lookup import resolve_tool


def validate_call(
    *,
    catalog: AgentCatalog,
    call: ToolCall,
    context: CallContext,
    toolset: str | None,
    phase: str | None,
    opened: frozenset[str] = frozenset(),
) -> PreparedCall:
    """Every check that needs nothing but the call, its tool version and the session (and
    the tools request_capability opened to the task, `opened`)."""
    version = resolve_tool(catalog=catalog, name=call.name, toolset=toolset, phase=phase, opened=opened)
    policy = catalog.policy_for(version.tool_id)
    # Strict exports let models send null for optional fields: null there means "not given".
    arguments = strip_optional_nulls(parse_arguments(call.arguments), version.parameters)
    # Normalizers first: they make a sloppy but meaningful value the one the schema accepts.
    normalized = normalize_arguments(arguments, version)
    validate_arguments(normalized, version)
    bound = apply_bindings(normalized, version, context.session)
    check_argument_rules(bound, version, policy)
    return PreparedCall(
        call=call,
        version=version,
        arguments=bound,
        # Over the bound arguments: the same call ids from another end user are another call.
        args_hash=args_hash(bound, version),
        subject=context.session.subject if context.session else "",
        approval_reason=approval_reason(bound, version, policy),
        is_prerequisite=version.tool_name in catalog.prerequisites,
        policy=policy,
        session_attributes=context.session.attributes if context.session else {},
    )


def admit_call(
    prepared: PreparedCall,
    *,
    context: CallContext,
    sighting: TaskSighting,
    default_rate_limit: int | None,
    dry_run: bool,
    state: CallState | None = None,
) -> PreparedCall:
    """The checks against what earlier calls did; returns the call, marked when seen before.

    A repeat of a call id already let through (a client retry, concurrent duplicates) is not
    a new attempt: it passed the state rules and the loop guard the first time, and the
    ledger answers it. A dry run is not held to the rate limit.
    """
    version = prepared.version
    if sighting.first_sight:
        check_state_rules(
            prepared.arguments, version, replace(context, policy=prepared.policy), sighting.history, state
        )
        check_loop(sighting.history, version)
    if dry_run:
        return prepared
    check_rate(
        calls_in_window=sighting.calls_in_window,
        limit=prepared.policy.rate_limit_per_minute or default_rate_limit,
        retry_after_s=sighting.retry_after_s,
    )
    return prepared if sighting.first_sight else replace(prepared, seen_before=True)
