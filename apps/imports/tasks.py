"""Beat jobs of the imports app: drift checks of MCP servers. Thin: ids in, one service call."""

from __future__ import annotations

from celery import shared_task

from apps.upstreams.models import Upstream, UpstreamKind

from .sync import upstream_sync, upstreams_claim_due_syncs

ACTOR = "beat:sync_upstreams"


@shared_task(name="upstreams.sync_due", acks_late=True, ignore_result=True, soft_time_limit=50, time_limit=60)
def upstreams_sync_due_task() -> int:
    """Every minute: enqueue a drift check of each MCP upstream whose interval has passed."""
    due = upstreams_claim_due_syncs()
    for upstream_id in due:
        upstream_sync_task.delay(upstream_id)
    return len(due)


# The hard limit stays above the longest upstream timeout (≤ 600 s), so a listing always
# answers (or times out) before Celery kills the task.
@shared_task(name="upstreams.sync", acks_late=True, ignore_result=True, soft_time_limit=630, time_limit=660)
def upstream_sync_task(upstream_id: int) -> int:
    upstream = Upstream.objects.select_related("tenant").filter(pk=upstream_id, kind=UpstreamKind.MCP).first()
    if upstream is None:  # deleted, or no longer an MCP server, since it was enqueued
        return 0
    return len(upstream_sync(upstream=upstream, actor=ACTOR).recorded)
