"""A task run by a Celery worker, another process than the web's, is counted on /metrics:
the counts live in the shared cache (apps/common/task_metrics.py), not in the worker's memory."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from apps.common.tasks import TaskName
from apps.gateway.tasks import ledger_reconcile_due_task
from tests.e2e.conftest import wait_for

pytestmark = pytest.mark.slow


def _scraped_runs(client: Any, task: str, outcome: str) -> float:
    text = client.get("/metrics").content.decode()
    labels = {"task": task, "outcome": outcome}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "toolhub_task_runs_total" and sample.labels == labels:
                return sample.value
    return 0.0


def test_a_beat_job_run_by_the_worker_is_counted_on_the_webs_metrics(transactional_db, client, celery_worker):
    # given what /metrics says now
    task = TaskName.LEDGER_RECONCILE_DUE.value
    before = _scraped_runs(client, task, "ok")

    # when the worker runs the job (nothing is due: it ends ok)
    ledger_reconcile_due_task.delay()

    # then the web process, which did not run it, serves the count
    wait_for(lambda: _scraped_runs(client, task, "ok") == before + 1, what="the worker's run on /metrics")
