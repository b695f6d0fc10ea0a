"""Guards against an agent going in circles or too fast; the orchestrator supplies the counts."""

from __future__ import annotations

import math

from apps.common.errors import LoopDetectedError, RateLimitedError
from apps.gateway.contracts import TaskHistory, VersionSpec


def check_loop(history: TaskHistory, version: VersionSpec) -> None:
    """Raises LoopDetectedError once the same normalized call was made `loop_limit` times."""
    made = history.identical_calls_in_task
    if made < version.loop_limit:
        return
    times = "once" if made == 1 else f"{made} times"
    raise LoopDetectedError(
        f"This exact call of {version.tool_name} (same normalized arguments) was already made "
        f"{times} in this task.",
        hint="Repeating it will not change the result. Change approach: call with other "
        "arguments, use another tool, or answer the user with what you have.",
    )


def check_rate(*, calls_in_window: int, limit: int | None, retry_after_s: float) -> None:
    """Raises RateLimitedError when `calls_in_window` (this call included) exceeds `limit`."""
    if limit is None or calls_in_window <= limit:
        return
    wait = max(retry_after_s, 0.0)
    raise RateLimitedError(
        f"Too many calls: the limit is {limit} per window and this call is number {calls_in_window}.",
        hint=f"Wait {max(math.ceil(wait), 1)} s before calling again, and do not repeat calls "
        "whose results you already have.",
        retry_after_s=round(wait, 3),
    )
