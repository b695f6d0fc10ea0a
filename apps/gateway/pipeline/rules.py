"""Stage 5: the version's declared business rules, as narrowed by the tenant's policy.

Rules the arguments alone can satisfy (date order, max span) answer `invalid_args`, with the
swap or the split spelled out; rules about state (per-task budget, daily quota, a required
earlier call, a limit read from state, custom callables) answer `business_rule`. State comes
in as data: the counters (TaskHistory) and what the state readers read (CallState), both
loaded by the gateway before these stages run. A tenant can only narrow a rule:
numeric limits take the smaller value, and hints may be replaced.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from apps.common.errors import BusinessRuleError, ErrorDetail, UnavailableError
from apps.gateway.contracts import (
    CallContext,
    CallState,
    PolicySpec,
    StateLimit,
    TaskHistory,
    VersionSpec,
    thaw,
)
from apps.gateway.text import clip, pointer

from .date_rules import date_rule_error

BusinessRule = Callable[[Mapping[str, Any], CallContext, TaskHistory], None]

NUMERIC_LIMITS = ("max_days", "max_calls")

_custom_rules: dict[str, BusinessRule] = {}


def business_rule(name: str) -> Callable[[BusinessRule], BusinessRule]:
    """Register `func(arguments, context, history) -> None` as the custom rule `name`.

    The function raises BusinessRuleError when the call must not run. Registering another
    function under a taken name is refused: two rules must not silently swap.
    """

    def register(func: BusinessRule) -> BusinessRule:
        existing = _custom_rules.get(name)
        if existing is not None and _qualified(existing) != _qualified(func):
            raise ValueError(f"business rule {name!r} is already registered by {_qualified(existing)}")
        _custom_rules[name] = func
        return func

    return register


def registered_rule_names() -> list[str]:
    """Names a version's `custom` rules may use (for the catalog's save-time check)."""
    return sorted(_custom_rules)


def _qualified(func: Callable[..., Any]) -> str:
    return f"{func.__module__}.{func.__qualname__}"


@dataclass(frozen=True)
class HistoryNeeds:
    """Which counters the state rules read; each costs the orchestrator a round trip."""

    task_calls: bool = False
    subject_calls: bool = False
    committed_tools: bool = False


# The effective rules of the (version, policy) pairs of the catalogs in use, which every
# stage of a call reads: both come from the memoized catalog, the same frozen objects call
# after call, and a catalog change brings new ones. Keyed by identity and holding both, so
# an id is not reused while its entry lives; past the bound it starts over.
_effective: dict[tuple[int, int], tuple[VersionSpec, PolicySpec, tuple[Mapping[str, Any], ...]]] = {}
_MAX_EFFECTIVE = 4096


def effective_rules(version: VersionSpec, policy: PolicySpec) -> tuple[Mapping[str, Any], ...]:
    """The version's rules with the tenant's narrowing applied (read-only mappings).

    `policy.rule_overrides` (by rule type) lowers numeric limits and may replace hints;
    `task_call_budget` and `daily_quota_per_subject` narrow the matching rules and add one
    when the version declares none.
    """
    key = (id(version), id(policy))
    known = _effective.get(key)
    if known is not None and known[0] is version and known[1] is policy:
        return known[2]
    rules = _narrowed_rules(version, policy)
    if len(_effective) >= _MAX_EFFECTIVE:
        _effective.clear()
    _effective[key] = (version, policy, rules)
    return rules


def _narrowed_rules(version: VersionSpec, policy: PolicySpec) -> tuple[Mapping[str, Any], ...]:
    policy_limits = {"task_budget": policy.task_call_budget, "daily_quota": policy.daily_quota_per_subject}
    rules = []
    for rule in version.rules:
        rule_type = rule.get("type", "")
        rules.append(_narrowed(rule, policy.rule_overrides.get(rule_type, {}), policy_limits.get(rule_type)))
    for rule_type, limit in policy_limits.items():
        if any(r.get("type") == rule_type for r in rules):
            continue
        override = policy.rule_overrides.get(rule_type)
        override = override if isinstance(override, Mapping) else {}
        # Any of the two limits starts the rule; _narrowed then applies the smaller.
        seed = next((v for v in (limit, override.get("max_calls")) if _is_number(v)), None)
        if seed is not None:
            rules.append(_narrowed({"type": rule_type, "max_calls": seed}, override, limit))
    return tuple(rules)


def _narrowed(
    rule: Mapping[str, Any], override: Mapping[str, Any], policy_limit: int | None
) -> Mapping[str, Any]:
    merged = thaw(rule)
    for key, value in override.items() if isinstance(override, Mapping) else ():
        if key == "hint" and isinstance(value, str) and value.strip():
            merged["hint"] = value
        elif key in NUMERIC_LIMITS and _is_number(merged.get(key)) and _is_number(value):
            merged[key] = min(merged[key], value)
    if policy_limit is not None and _is_number(merged.get("max_calls")):
        merged["max_calls"] = min(merged["max_calls"], policy_limit)
    return MappingProxyType(merged)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def history_needed(version: VersionSpec, policy: PolicySpec) -> HistoryNeeds:
    """The history counters `check_state_rules` will read for this version and policy."""
    types = {rule.get("type") for rule in effective_rules(version, policy)}
    # A custom rule may read any counter.
    custom = "custom" in types
    return HistoryNeeds(
        task_calls=custom or "task_budget" in types,
        subject_calls=custom or "daily_quota" in types,
        committed_tools=custom or "requires_earlier_call" in types,
    )


def state_readers_needed(version: VersionSpec, policy: PolicySpec) -> tuple[str, ...]:
    """The state readers `check_state_rules` will read for this version, in rule order."""
    names = (str(rule.get("reader", "")) for rule in effective_rules(version, policy)
             if rule.get("type") == "state_limit")
    return tuple(dict.fromkeys(names))


def check_argument_rules(arguments: Mapping[str, Any], version: VersionSpec, policy: PolicySpec) -> None:
    """Raises InvalidArgsError for a broken date order or a range longer than allowed."""
    error = date_rule_error(arguments, effective_rules(version, policy), version.tool_name)
    if error is not None:
        raise error


def check_state_rules(
    arguments: Mapping[str, Any],
    version: VersionSpec,
    context: CallContext,
    history: TaskHistory,
    state: CallState | None = None,
) -> None:
    """Raises BusinessRuleError when a state rule refuses the call.

    Raises UnavailableError when a custom rule names no registered callable, or a state limit
    a reader that read nothing for it: the tool is misconfigured, and nothing runs with a rule
    skipped.
    """
    state = state or CallState()
    tool = version.tool_name
    for rule in effective_rules(version, context.policy):
        rule_type = rule.get("type")
        own_hint = rule.get("hint")
        if rule_type == "task_budget" and history.calls_of_tool_in_task >= rule["max_calls"]:
            raise BusinessRuleError(
                f"{tool} was already called {history.calls_of_tool_in_task} times in this task; "
                f"the limit is {rule['max_calls']} per task.",
                hint=own_hint
                or f"Do not call {tool} again in this task: work with the results "
                "you already have, or answer the user with what you know.",
            )
        if rule_type == "daily_quota" and history.subject_calls_today >= rule["max_calls"]:
            raise BusinessRuleError(
                f"This user's daily limit of {rule['max_calls']} calls of {tool} is used up.",
                hint=own_hint
                or f"Do not call {tool} again today for this user: tell the user "
                "the daily limit is reached and that it resets tomorrow.",
            )
        if rule_type == "requires_earlier_call" and rule["tool"] not in history.committed_tools_in_task:
            raise BusinessRuleError(
                f"{tool} needs a successful call of {rule['tool']} earlier in this task.",
                hint=own_hint or f"Call {rule['tool']} first in this task, then call {tool} again.",
            )
        if rule_type == "state_limit":
            _check_state_limit(rule, arguments, state, version)
        if rule_type == "custom":
            _run_custom(rule, arguments, context, history, version)


def _check_state_limit(
    rule: Mapping[str, Any], arguments: Mapping[str, Any], state: CallState, version: VersionSpec
) -> None:
    reader, field = str(rule.get("reader", "")), str(rule["field"])
    if reader not in state.limits:
        raise _unregistered(version, f"state reader {clip(reader, 60)!r}")
    limit: StateLimit | None = state.limits[reader]
    value = arguments.get(field)
    # A value of another type is the schema's to refuse.
    if limit is None or not isinstance(value, int | float) or isinstance(value, bool):
        return
    if value <= limit.maximum:
        return
    tool = version.tool_name
    if limit.maximum <= 0:
        hint = f"Nothing can be done with {tool} here: do not call it again for this; tell the user why."
    else:
        hint = (f"Call {tool} again with {field} at most {limit.maximum} only if the user wants that; "
                f"otherwise tell the user that {limit.left}.")
    raise BusinessRuleError(
        f"{field} is {value}, but only {limit.left}.",
        hint=rule.get("hint") or hint,
        details=[ErrorDetail(path=pointer([field]), problem=f"more than {limit.maximum}, the most now")],
    )


def _run_custom(
    rule: Mapping[str, Any],
    arguments: Mapping[str, Any],
    context: CallContext,
    history: TaskHistory,
    version: VersionSpec,
) -> None:
    name = str(rule.get("callable", ""))
    func = _custom_rules.get(name)
    if func is None:
        raise _unregistered(version, f"rule {clip(name, 60)!r}")
    try:
        func(MappingProxyType(dict(arguments)), context, history)
    except BusinessRuleError as exc:
        if not rule.get("hint"):
            raise
        raise BusinessRuleError(
            exc.message,
            hint=rule["hint"],
            details=exc.details,
            retry_after_s=exc.retry_after_s,
            extra=exc.extra,
        ) from None


def _unregistered(version: VersionSpec, what: str) -> UnavailableError:
    return UnavailableError(
        f"{version.tool_name} cannot be called: its {what} is not registered in this ToolHub.",
        hint="This is a problem in the tool's definition, not in your call: do not retry. "
        "Use another tool or tell the user this action is unavailable for now.",
    )
