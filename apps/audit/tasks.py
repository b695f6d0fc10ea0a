"""Beat jobs of the logs: partitions created ahead, partitions past retention dropped."""

from __future__ import annotations

from celery import shared_task

from .partitions import apply_retention, create_ahead


@shared_task(name="audit.create_partitions", ignore_result=True, soft_time_limit=300, time_limit=360)
def create_partitions_task() -> dict[str, int]:
    return {report.log: len(report.created) for report in create_ahead()}


@shared_task(name="audit.apply_retention", ignore_result=True, soft_time_limit=300, time_limit=360)
def apply_retention_task() -> dict[str, int]:
    return {report.log: len(report.dropped) or report.deleted_rows for report in apply_retention()}
