"""Cache-backed counters behind the state rules, the loop guard and the rate limit.

They live in the shared cache (Redis in production) rather than in tables: they are soft
limits read on every call, and a counter read costs one cache round trip where a COUNT over
the invocation log would cost a query that grows with the log. A new call costs one round
trip (see_call); a refused one a second (forget_call).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime

from django.core.cache import cache

from apps.common.cache import CacheBatch
from apps.tenancy.authentication import KeyCheck, StaleKey
from apps.upstreams.memo import UPSTREAM_GENERATION_KEY

from .contracts import PreparedCall, TaskHistory, TaskSighting
from .pipeline.rules import HistoryNeeds

_DAY_S = 86_400
_TASK_TTL_S = 7 * _DAY_S
# A minute's rate window, kept a second past its minute.
_RATE_TTL_S = 61


def _key(kind: str, *parts: object) -> str:
    """A counter's cache key. Parts that are free-form ids (tasks, calls, subjects) can be
    long: past 200 characters they become a digest, so every key stays within what caches
    accept (250). The digest's "#" never starts the numeric ids that lead every other key."""
    rest = ":".join(str(part) for part in parts)
    if len(rest) > 200:
        rest = "#" + hashlib.blake2b(rest.encode(), digest_size=20).hexdigest()
    return f"th:{kind}:{rest}"


def _task_calls_key(tenant_id: int, task_id: str, tool: str) -> str:
    return _key("task-calls", tenant_id, task_id, tool)


def _identical_key(tenant_id: int, task_id: str, tool: str, args_hash: str) -> str:
    return _key("identical", tenant_id, task_id, tool, args_hash)


def _subject_key(tenant_id: int, subject: str, tool: str, now: datetime) -> str:
    return _key("subject-calls", tenant_id, subject, tool, f"{now:%Y%m%d}")


def _done_key(tenant_id: int, task_id: str, tool: str) -> str:
    return _key("done", tenant_id, task_id, tool)


def _seen_key(tenant_id: int, task_id: str, call: PreparedCall) -> str:
    # The task's length keeps the two free-form ids apart: task "a:b" with call "c" is not
    # task "a" with call "b:c".
    return _key(
        "seen", tenant_id, len(task_id), task_id, call.call.call_id, call.version.tool_name, call.args_hash
    )


def see_call(
    *,
    tenant_id: int,
    agent_id: int,
    task_id: str,
    call: PreparedCall,
    needs: HistoryNeeds,
    required_tools: Iterable[str],
    now: datetime,
    dry_run: bool,
    key_check: KeyCheck | None = None,
) -> TaskSighting:
    """Claim the call id, read the task's history and count the call: one round trip,
    which also settles `key_check` when it is still to be done (the claim and counts are
    undone then, and StaleKey raised, when the key is not as remembered).

    The claim is atomic (add), so of concurrent duplicates exactly one is first. Only a
    first sight is counted for later guards (identical calls, the task's budget, the
    subject's quota), in the same step; the history read before it does not include this
    call. `forget_call` undoes the claim and those counts when the call is refused after
    all. The rate counts every call that reaches the guards, retries and refusals too: an
    agent that keeps sending them is still sending them. A dry run only looks.
    """
    tool = call.version.tool_name
    seen_key = _seen_key(tenant_id, task_id, call)
    counters = _counters(tenant_id, task_id, call, needs, now)
    done_keys = {_done_key(tenant_id, task_id, t): t for t in required_tools} if needs.committed_tools else {}

    # A tool that calls an upstream: its executor's memo is checked against this generation.
    generation_keys = [UPSTREAM_GENERATION_KEY] if "upstream" in call.version.executor_config else []

    batch = CacheBatch(cache)
    earlier = batch.get_many([*(key for key, _ in counters.values()), *done_keys, *generation_keys])
    if dry_run:
        claim = batch.get_many([seen_key])
    else:
        claim = batch.add(seen_key, 1, _TASK_TTL_S, then_count=counters.values())
    rate = None if dry_run else batch.count(_rate_key(agent_id, tool, now), _RATE_TTL_S)
    check = batch.get_many(key_check.keys) if key_check is not None and not key_check.done else None
    results = batch.run()
    if key_check is not None and check is not None:
        try:
            key_check.settle(results[check])
        except StaleKey:
            if not dry_run:
                # The request is served again with its key read in full, and counted then.
                _count_rate(agent_id, tool, now, delta=-1)
                if results[claim]:
                    forget_call(tenant_id=tenant_id, task_id=task_id, call=call, needs=needs, now=now)
            raise

    found = results[earlier]

    def counted(name: str) -> int:
        return int(found.get(counters[name][0], 0)) if name in counters else 0

    return TaskSighting(
        first_sight=seen_key not in results[claim] if dry_run else results[claim],
        history=TaskHistory(
            calls_of_tool_in_task=counted("task"),
            subject_calls_today=counted("subject"),
            committed_tools_in_task=frozenset(t for k, t in done_keys.items() if found.get(k)),
            identical_calls_in_task=counted("identical"),
        ),
        calls_in_window=0 if rate is None else results[rate],
        retry_after_s=60 - now.timestamp() % 60,
        upstream_generation=found.get(UPSTREAM_GENERATION_KEY),
    )


def forget_call(
    *, tenant_id: int, task_id: str, call: PreparedCall, needs: HistoryNeeds, now: datetime
) -> None:
    """Undo a first sight's claim and counts: the call was refused after all."""
    cache.delete(_seen_key(tenant_id, task_id, call))
    batch = CacheBatch(cache)
    for key, timeout in _counters(tenant_id, task_id, call, needs, now).values():
        batch.count(key, timeout, delta=-1)
    batch.run()


def _counters(
    tenant_id: int, task_id: str, call: PreparedCall, needs: HistoryNeeds, now: datetime
) -> dict[str, tuple[str, int]]:
    """The counters a first sight adds to, by name, with their expiry: identical calls
    always, the task's calls of the tool and the subject's calls today when a rule reads them."""
    tool = call.version.tool_name
    counters = {"identical": (_identical_key(tenant_id, task_id, tool, call.args_hash), _TASK_TTL_S)}
    if needs.task_calls:
        counters["task"] = (_task_calls_key(tenant_id, task_id, tool), _TASK_TTL_S)
    if needs.subject_calls:
        counters["subject"] = (_subject_key(tenant_id, call.subject, tool, now), 2 * _DAY_S)
    return counters


def _rate_key(agent_id: int, tool: str, now: datetime) -> str:
    return _key("rate", agent_id, tool, int(now.timestamp()) // 60)


def _count_rate(agent_id: int, tool: str, now: datetime, *, delta: int) -> None:
    batch = CacheBatch(cache)
    batch.count(_rate_key(agent_id, tool, now), _RATE_TTL_S, delta=delta)
    batch.run()


def mark_done(*, tenant_id: int, task_id: str, tool: str) -> None:
    """Remember that `tool` succeeded in this task (for requires_earlier_call rules)."""
    cache.set(_done_key(tenant_id, task_id, tool), 1, _TASK_TTL_S)
