"""The one task decorator (apps/common/tasks.py): its defaults, its metrics, and that every
ToolHub task is declared through it under a name of the table."""

from __future__ import annotations

import importlib
import importlib.util

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.apps import apps as django_apps
from prometheus_client import CollectorRegistry

from apps.common.task_metrics import TaskMetricsCollector
from apps.common.tasks import TaskName, ToolHubTask, soft_limit_for, toolhub_task
from apps.gateway import tasks as gateway_tasks
from toolhub.celery import app as celery_app


def _scraped(sample: str, labels: dict[str, str]) -> float:
    """A sample as /metrics shows it, read by the collector it runs at scrape time."""
    registry = CollectorRegistry()
    registry.register(TaskMetricsCollector())
    return registry.get_sample_value(sample, labels) or 0.0


def _runs(name: str, outcome: str) -> float:
    return _scraped("toolhub_task_runs_total", {"task": name, "outcome": outcome})


def _duration_count(name: str) -> float:
    return _scraped("toolhub_task_seconds_count", {"task": name})


def _toolhub_task_modules() -> None:
    """Import every app's tasks module, as the worker's autodiscovery does."""
    for config in django_apps.get_app_configs():
        if config.name.startswith("apps.") and importlib.util.find_spec(f"{config.name}.tasks"):
            importlib.import_module(f"{config.name}.tasks")


def test_a_task_gets_acks_late_ignored_results_and_a_soft_limit_a_sixth_below_its_hard_one():
    task = gateway_tasks.ledger_reconcile_due_task

    assert isinstance(task, ToolHubTask)
    assert (task.name, task.acks_late, task.ignore_result) == ("ledger.reconcile_due", True, True)
    assert (task.time_limit, task.soft_time_limit) == (60, 50) == (60, soft_limit_for(60))


def test_a_given_soft_limit_and_reject_on_worker_lost_are_kept():
    task = gateway_tasks.execute_entry_task

    assert (task.time_limit, task.soft_time_limit, task.reject_on_worker_lost) == (660, 630, True)


def test_a_name_outside_the_table_or_a_soft_limit_not_below_the_hard_one_is_refused_at_declaration():
    with pytest.raises(ValueError):
        toolhub_task(name="ledger.renamed", time_limit=60)
    with pytest.raises(ValueError, match="not below the hard one"):
        toolhub_task(name=TaskName.LEDGER_SWEEP, time_limit=60, soft_time_limit=60)


def test_delay_still_checks_the_task_functions_arguments():
    # The metrics are taken in ToolHubTask.__call__, not a wrapper, so .delay() still sees
    # the function's own signature and refuses a wrong call before anything is sent.
    with pytest.raises(TypeError):
        gateway_tasks.execute_entry_task.delay()


@pytest.mark.django_db
def test_a_run_is_counted_and_timed_by_outcome(monkeypatch):
    name = TaskName.LEDGER_RECONCILE_DUE.value
    ok, failed, timed_out, timed = (
        _runs(name, "ok"), _runs(name, "failed"), _runs(name, "timed_out"), _duration_count(name)
    )

    # given nothing due, when the beat job runs as a worker runs it
    result = gateway_tasks.ledger_reconcile_due_task.apply()

    assert result.get() == 0
    assert _runs(name, "ok") == ok + 1

    # when it raises, and when it reaches its soft limit
    def broken() -> list[str]:
        raise RuntimeError("database gone")

    def slow() -> list[str]:
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(gateway_tasks, "entries_due_for_reconciliation", broken)
    assert gateway_tasks.ledger_reconcile_due_task.apply().failed()
    monkeypatch.setattr(gateway_tasks, "entries_due_for_reconciliation", slow)
    assert gateway_tasks.ledger_reconcile_due_task.apply().failed()

    assert (_runs(name, "ok"), _runs(name, "failed"), _runs(name, "timed_out")) == (
        ok + 1, failed + 1, timed_out + 1
    )
    assert _duration_count(name) == timed + 3


def test_every_toolhub_task_is_declared_through_the_decorator_under_a_name_of_the_table():
    _toolhub_task_modules()
    ours = {name: task for name, task in celery_app.tasks.items() if task.run.__module__.startswith("apps.")}

    not_through_it = sorted(name for name, task in ours.items() if not isinstance(task, ToolHubTask))
    assert not_through_it == [], "declare these with apps.common.tasks.toolhub_task"
    assert sorted(ours) == sorted(TaskName), "TaskName is the one table of task names"


def test_beat_schedules_only_names_of_the_table():
    scheduled = {job["task"] for job in celery_app.conf.beat_schedule.values()}

    assert scheduled <= set(TaskName)
