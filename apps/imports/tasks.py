"""Tasks of the imports app: OpenAPI imports started from the admin, and the beat jobs that
check MCP servers for drift. Thin: ids in, one service call."""

from __future__ import annotations

from apps.common.tasks import TaskName, toolhub_task
from apps.upstreams.models import Upstream, UpstreamKind

from .runs import RUN_TIME_LIMIT_S, openapi_import_run_execute
from .sync import upstream_sync, upstreams_claim_due_syncs

ACTOR = "beat:sync_upstreams"


@toolhub_task(name=TaskName.UPSTREAMS_SYNC_DUE, time_limit=60)
def upstreams_sync_due_task() -> int:
    """Every minute: enqueue a drift check of each MCP upstream whose interval has passed."""
    due = upstreams_claim_due_syncs()
    for upstream_id in due:
        upstream_sync_task.delay(upstream_id)
    return len(due)


# The hard limit stays above the longest upstream timeout (≤ 600 s), so a listing always
# answers (or times out) before Celery kills the task.
@toolhub_task(name=TaskName.UPSTREAMS_SYNC, time_limit=660, soft_time_limit=630)
def upstream_sync_task(upstream_id: int) -> int:
    upstream = Upstream.objects.select_related("tenant").filter(pk=upstream_id, kind=UpstreamKind.MCP).first()
    if upstream is None:  # deleted, or no longer an MCP server, since it was enqueued
        return 0
    return len(upstream_sync(upstream=upstream, actor=ACTOR).recorded)


# An import is bounded by TOOLHUB_IMPORT_MAX_SECONDS (default 120 s), which stays below the
# soft limit. A worker that dies mid-import rolls its transaction back and the task is
# delivered again (acks_late, reject_on_worker_lost); one killed at the hard limit leaves its
# run "running", which the page reports as stopped (runs.run_stopped).
@toolhub_task(
    name=TaskName.IMPORTS_OPENAPI_IMPORT,
    time_limit=RUN_TIME_LIMIT_S,
    soft_time_limit=RUN_TIME_LIMIT_S - 60,
    reject_on_worker_lost=True,
)
def openapi_import_task(run_id: int) -> str:
    return openapi_import_run_execute(run_id=run_id)
