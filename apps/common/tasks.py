"""How every ToolHub Celery task is declared: `@toolhub_task(name=TaskName..., time_limit=...)`.

One decorator holds the task habits (docs/architecture.md, "Thin tasks"), so no task can
forget one:

- `acks_late=True`: a message is acknowledged after the task ran, so a worker that dies
  mid-task leaves it to be delivered again (tasks take ids and re-read state: they may run
  twice).
- A hard `time_limit` is required; the soft limit, when not given, is five sixths of it,
  leaving the task a sixth of its time to unwind after `SoftTimeLimitExceeded`.
- `ignore_result=True` unless asked otherwise: nothing reads results (no result backend).
- `reject_on_worker_lost` where a task says so; otherwise the setting's
  (`CELERY_TASK_REJECT_ON_WORKER_LOST`) applies.
- Two metrics per task (`toolhub_task_runs_total{task, outcome}`,
  `toolhub_task_seconds{task}`), counted in the shared cache so that a run on any worker of
  any host reaches `/metrics` (task_metrics.py; docs/operations.md, "Task metrics").

Names are wire identifiers: the broker routes a message by the name it was sent under and
beat schedules jobs by name, so a renamed task would leave the messages already queued under
the old name unrunnable, and a worker not yet upgraded could not run the new one. So names
never change, even when a task moves (the ledger's beat jobs run in the gateway and keep
`ledger.*`; the drift checks run in imports and keep `upstreams.*`), and `TaskName`
(task_names.py) is the one table of them: a task is declared with a member of it, and beat (toolhub/celery.py)
names its jobs with members of it. Adding a task is adding a row; a row is never renamed
(to retire a name, keep its row until no message of it can be queued).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

from celery import Task, shared_task
from celery.exceptions import Retry, SoftTimeLimitExceeded

from .task_metrics import FAILED, OK, RETRIED, TIMED_OUT, task_run_recorded
from .task_names import TaskName

__all__ = ["TaskName", "ToolHubTask", "soft_limit_for", "toolhub_task"]

P = ParamSpec("P")
R = TypeVar("R")


class ToolHubTask(Task):
    """The base of every ToolHub task: counts and times each run that ends.

    Measured in `__call__`, which Celery's worker calls instead of `run` when a task class
    defines it (and `.apply()` likewise), so the argument check of `.delay()` still reads the
    task function's own signature.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        outcome = FAILED
        try:
            result = super().__call__(*args, **kwargs)
        except Retry:
            outcome = RETRIED
            raise
        except SoftTimeLimitExceeded:
            outcome = TIMED_OUT
            raise
        else:
            outcome = OK
            return result
        finally:
            task_run_recorded(task=self.name, outcome=outcome, seconds=time.perf_counter() - started)


def soft_limit_for(time_limit: int) -> int:
    """The soft limit a task gets when it names none: five sixths of its hard limit."""
    return time_limit * 5 // 6


def toolhub_task(
    *,
    name: TaskName,
    time_limit: int,
    soft_time_limit: int | None = None,
    ignore_result: bool = True,
    reject_on_worker_lost: bool | None = None,
) -> Callable[[Callable[P, R]], Task[P, R]]:
    """Declare a ToolHub task: `acks_late`, the time limits, the metrics, a name of the table.

    Raises ValueError at import time for a name outside `TaskName` or a soft limit that is
    not below the hard one.
    """
    name = TaskName(name)
    soft = soft_limit_for(time_limit) if soft_time_limit is None else soft_time_limit
    if not 0 < soft < time_limit:
        raise ValueError(f"{name}: soft time limit {soft} s, not below the hard one ({time_limit} s)")

    def declare(func: Callable[P, R]) -> Task[P, R]:
        options: dict[str, Any] = {}
        if reject_on_worker_lost is not None:  # None: the setting's value, as for any task
            options["reject_on_worker_lost"] = reject_on_worker_lost
        task = shared_task(
            name=name.value,
            base=ToolHubTask,
            acks_late=True,
            ignore_result=ignore_result,
            soft_time_limit=soft,
            time_limit=time_limit,
            **options,
        )(func)
        return cast("Task[P, R]", task)

    return declare

