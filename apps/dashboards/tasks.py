"""The beat job that rolls the invocation log up into hourly rows for the dashboard, and drops
the rollups past their retention."""

from __future__ import annotations

from apps.common.tasks import TaskName, toolhub_task

from .rollups import drop_expired_rollups, roll_up_invocations


@toolhub_task(name=TaskName.DASHBOARDS_ROLLUP_INVOCATIONS, time_limit=1800)
def rollup_invocations_task() -> dict[str, int]:
    report = roll_up_invocations()
    dropped = drop_expired_rollups()
    return {"invocation_rows": report.invocation_rows, "latency_rows": report.latency_rows,
            "dropped_rows": dropped}
