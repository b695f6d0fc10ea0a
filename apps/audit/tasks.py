"""Beat jobs of the logs: partitions created ahead, partitions past retention dropped."""

from __future__ import annotations

from apps.common.tasks import TaskName, toolhub_task

from .partitions import apply_retention, create_ahead


@toolhub_task(name=TaskName.AUDIT_CREATE_PARTITIONS, time_limit=360)
def create_partitions_task() -> dict[str, int]:
    return {report.log: len(report.created) for report in create_ahead()}


@toolhub_task(name=TaskName.AUDIT_APPLY_RETENTION, time_limit=360)
def apply_retention_task() -> dict[str, int]:
    return {report.log: len(report.dropped) or report.deleted_rows for report in apply_retention()}
