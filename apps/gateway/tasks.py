"""Celery tasks of the gateway. Thin: ids in, one service call."""

from __future__ import annotations

from celery import shared_task

from .services import execute_async_entry


# The hard limit stays above the longest tool timeout (ToolVersion.timeout_s ≤ 600 s), so an
# executor always answers (or times out) before Celery kills the task.
@shared_task(
    name="gateway.execute_entry",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    soft_time_limit=630,
    time_limit=660,
)
def execute_entry_task(entry_id: str) -> None:
    execute_async_entry(entry_id=entry_id)
