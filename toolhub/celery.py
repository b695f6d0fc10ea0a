"""The Celery app and the one beat schedule of the project."""

import os
from typing import Any

from celery import Celery
from celery.signals import setup_logging, task_postrun, task_prerun, worker_process_init

from apps.common.request_context import bind_task_id
from apps.common.tasks import TaskName

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings.base")

app = Celery("toolhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The one beat schedule of the project (README "Operations" says what each job does).
app.conf.beat_schedule = {
    "ledger-sweep": {"task": TaskName.LEDGER_SWEEP.value, "schedule": 15.0},
    "ledger-reconcile-due": {"task": TaskName.LEDGER_RECONCILE_DUE.value, "schedule": 10.0},
    "dashboards-rollup-invocations": {
        "task": TaskName.DASHBOARDS_ROLLUP_INVOCATIONS.value,
        "schedule": 300.0,
    },
    "upstreams-sync-due": {"task": TaskName.UPSTREAMS_SYNC_DUE.value, "schedule": 60.0},
    "logs-create-partitions": {"task": TaskName.AUDIT_CREATE_PARTITIONS.value, "schedule": 3600.0},
    "logs-apply-retention": {"task": TaskName.AUDIT_APPLY_RETENTION.value, "schedule": 3600.0},
}


# Workers and beat log like the web processes (JSON, settings.LOGGING) instead of Celery's
# own format, and every line written while a task runs names the task.
@setup_logging.connect
def _use_django_logging(loglevel: Any = None, **kwargs: Any) -> None:
    from django.conf import settings

    from apps.common.logs import celery_setup_logging

    celery_setup_logging(loglevel=loglevel, config=settings.LOGGING)


@task_prerun.connect
def _bind_task_id(task_id: str | None = None, **kwargs: Any) -> None:
    bind_task_id(task_id)


@task_postrun.connect
def _unbind_task_id(**kwargs: Any) -> None:
    bind_task_id(None)


# Each worker process, once forked, opens the sessions of the MCP upstreams that granted tools
# call, on a thread of its own (TOOLHUB_MCP_WARM_S): its first call needs no handshake; and
# starts the sandboxes code runs take (TOOLHUB_SANDBOX_WARM): its first run starts warm. Sent
# only to a worker's pool processes: never in beat, `manage.py` commands or eager tests.
@worker_process_init.connect
def _warm_up(**kwargs: Any) -> None:
    from apps.gateway.outbound import code_runs_warm_soon, mcp_sessions_warm_soon

    mcp_sessions_warm_soon()
    code_runs_warm_soon()
