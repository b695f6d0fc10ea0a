"""Cache-backed counters behind the state rules, the loop guard and the rate limit.

They live in the shared cache (Redis in production) rather than in tables: they are soft
limits read on every call, and a counter read costs one cache round trip where a COUNT over
the invocation log would cost a query that grows with the log.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.core.cache import cache

from .contracts import PreparedCall, TaskHistory
from .pipeline.rules import HistoryNeeds

_DAY_S = 86_400
_TASK_TTL_S = 7 * _DAY_S


def _task_calls_key(tenant_id: int, task_id: str, tool: str) -> str:
    return f"th:task-calls:{tenant_id}:{task_id}:{tool}"


def _identical_key(tenant_id: int, task_id: str, tool: str, args_hash: str) -> str:
    return f"th:identical:{tenant_id}:{task_id}:{tool}:{args_hash}"


def _subject_key(tenant_id: int, subject: str, tool: str, now: datetime) -> str:
    return f"th:subject-calls:{tenant_id}:{subject}:{tool}:{now:%Y%m%d}"


def _done_key(tenant_id: int, task_id: str, tool: str) -> str:
    return f"th:done:{tenant_id}:{task_id}:{tool}"


def _seen_key(tenant_id: int, task_id: str, call: PreparedCall) -> str:
    return f"th:seen:{tenant_id}:{task_id}:{call.call.call_id}:{call.version.tool_name}:{call.args_hash}"


def call_first_seen(*, tenant_id: int, task_id: str, call: PreparedCall, peek: bool = False) -> bool:
    """True the first time this call id with these arguments reaches the state rules.

    Atomic (cache add), so of concurrent duplicates exactly one is first. `peek` only
    looks (dry runs), and `forget_call` undoes it when the call is refused after all.
    """
    key = _seen_key(tenant_id, task_id, call)
    if peek:
        return cache.get(key) is None
    return bool(cache.add(key, 1, _TASK_TTL_S))


def forget_call(*, tenant_id: int, task_id: str, call: PreparedCall) -> None:
    cache.delete(_seen_key(tenant_id, task_id, call))


def _rate_key(agent_id: int, tool: str, now: datetime) -> str:
    return f"th:rate:{agent_id}:{tool}:{int(now.timestamp()) // 60}"


def task_history(
    *,
    tenant_id: int,
    task_id: str,
    call: PreparedCall,
    needs: HistoryNeeds,
    required_tools: Iterable[str],
    now: datetime,
) -> TaskHistory:
    """What earlier calls of this task (and this subject today) did: one cache round trip."""
    tool = call.version.tool_name
    keys = {"identical": _identical_key(tenant_id, task_id, tool, call.args_hash)}
    if needs.task_calls:
        keys["task"] = _task_calls_key(tenant_id, task_id, tool)
    if needs.subject_calls:
        keys["subject"] = _subject_key(tenant_id, call.subject, tool, now)
    done_keys = {_done_key(tenant_id, task_id, t): t for t in required_tools} if needs.committed_tools else {}
    found = cache.get_many([*keys.values(), *done_keys])
    return TaskHistory(
        calls_of_tool_in_task=int(found.get(keys.get("task", ""), 0)),
        subject_calls_today=int(found.get(keys.get("subject", ""), 0)),
        committed_tools_in_task=frozenset(t for k, t in done_keys.items() if found.get(k)),
        identical_calls_in_task=int(found.get(keys["identical"], 0)),
    )


def _incr(key: str, ttl_s: int, *, likely_new: bool = False) -> int:
    """Increment a counter, creating it with `ttl_s`: one round trip in the likely case (the
    key exists or, with `likely_new`, it does not yet)."""
    if likely_new and cache.add(key, 1, ttl_s):
        return 1
    try:
        return int(cache.incr(key))
    except ValueError:
        if cache.add(key, 1, ttl_s):
            return 1
        return int(cache.incr(key))


def count_call(
    *, tenant_id: int, task_id: str, call: PreparedCall, needs: HistoryNeeds, now: datetime
) -> None:
    """Count a call that went on to execution."""
    tool = call.version.tool_name
    # Most calls are not repeats: the identical-call counter is usually new.
    _incr(_identical_key(tenant_id, task_id, tool, call.args_hash), _TASK_TTL_S, likely_new=True)
    if needs.task_calls:
        _incr(_task_calls_key(tenant_id, task_id, tool), _TASK_TTL_S)
    if needs.subject_calls:
        _incr(_subject_key(tenant_id, call.subject, tool, now), 2 * _DAY_S)


def mark_done(*, tenant_id: int, task_id: str, tool: str) -> None:
    """Remember that `tool` succeeded in this task (for requires_earlier_call rules)."""
    cache.set(_done_key(tenant_id, task_id, tool), 1, _TASK_TTL_S)


def count_rate(*, agent_id: int, tool: str, now: datetime) -> tuple[int, float]:
    """This minute's calls of the agent to the tool, this one included, and seconds left."""
    calls = _incr(_rate_key(agent_id, tool, now), 61)
    return calls, 60 - now.timestamp() % 60
