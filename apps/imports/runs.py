"""OpenAPI imports started from the admin and run by a Celery task, so no request waits for
a big document: the page stores the upload once (a run, models.py) and enqueues it; the task
runs `openapi_import` with its progress written to the cache (the import is one transaction,
so nothing it writes is visible before it ends), then stores the report, or why it failed,
and frees the document. The page refreshes until then."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from django.core.cache import cache
from django.utils import timezone

from apps.catalog.lint import Finding
from apps.catalog.models import ToolVersion
from apps.tenancy.models import Tenant

from .errors import ImportRefused
from .fetch import document_fetch
from .import_tail import ImportReport, OperationResult
from .models import OpenAPIImportRun, RunStatus
from .openapi_services import Progress, openapi_import
from .removed import RemovedOperation

logger = logging.getLogger(__name__)

# How often at most the task writes its progress, and how long the cache keeps it.
_PROGRESS_EVERY_S = 0.5
_PROGRESS_TTL_S = 6 * 3600
# The task's hard time limit (tasks.py). An import is bounded by TOOLHUB_IMPORT_MAX_SECONDS,
# well below it; a run still unfinished this long after it last changed lost its worker.
RUN_TIME_LIMIT_S = 960


def _progress_key(run_id: int) -> str:
    return f"imports:openapi-run:{run_id}:progress"


def run_progress(run: OpenAPIImportRun) -> tuple[int, int] | None:
    """(operations done, operations in all) of a running import, once it has read its document."""
    found = cache.get(_progress_key(run.pk))
    return (int(found[0]), int(found[1])) if found else None


def run_stopped(run: OpenAPIImportRun) -> bool:
    """Whether a run that never finished lost its worker (killed at the task's hard limit)."""
    return run.status == RunStatus.RUNNING and \
        (timezone.now() - run.updated_at).total_seconds() > RUN_TIME_LIMIT_S


def openapi_import_run_start(*, tenant: Tenant, actor: str, document: bytes | None, options: dict[str, Any],
                             enqueue: Callable[[int], object]) -> OpenAPIImportRun:
    """A queued run of `openapi_import` with `options` (its keyword arguments but the document:
    `document`, or `fetched_from` for the task to fetch), handed to `enqueue`. A run the queue
    refuses (the broker unreachable) is failed, saying so."""
    run = OpenAPIImportRun.objects.create(tenant=tenant, actor=actor, document=document, options=options)
    try:
        enqueue(run.pk)
    except Exception as exc:  # noqa: BLE001 - whatever the broker raises, the run must say it
        logger.warning("openapi import run %s not enqueued: %s", run.pk, exc)
        _finish(run, status=RunStatus.FAILED, error="The import could not be queued (the task queue is "
                "unreachable); nothing was imported. Try again once the workers' broker is up.")
    return run


def openapi_import_run_execute(*, run_id: int) -> str:
    """Run the queued (or, after a worker died, running) import `run_id`; its status."""
    run = OpenAPIImportRun.objects.select_related("tenant").defer("document").filter(pk=run_id).first()
    if run is None or run.status in (RunStatus.DONE, RunStatus.FAILED):
        return run.status if run else ""
    OpenAPIImportRun.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, updated_at=timezone.now())
    options = run.options
    try:
        report = openapi_import(tenant=run.tenant, document_text=_document_of(run), actor=run.actor,
                                progress=_progress_writer(run.pk), **options)
    except ImportRefused as refused:
        _finish(run, status=RunStatus.FAILED, error=f"Nothing was imported. {refused}")
    except Exception as exc:
        # Unexpected: the page must still say the import ended, and nothing of it was written.
        logger.exception("openapi import run %s failed", run.pk)
        _finish(run, status=RunStatus.FAILED, error=f"The import failed ({type(exc).__name__}); nothing was "
                "imported. The server's log has the details.")
    else:
        _finish(run, status=RunStatus.DONE, report=report_as_data(report))
    return run.status


def _document_of(run: OpenAPIImportRun) -> bytes:
    if url := run.options.get("fetched_from"):
        return document_fetch(url=url)
    stored = OpenAPIImportRun.objects.values_list("document", flat=True).get(pk=run.pk)
    if stored is None:
        raise ImportRefused("The uploaded document is no longer stored; upload it again.")
    return bytes(stored)


def _finish(run: OpenAPIImportRun, *, status: RunStatus, error: str = "",
            report: dict[str, Any] | None = None) -> None:
    run.status, run.error, run.report, run.finished_at = status, error, report, timezone.now()
    run.document = None
    run.save(update_fields=["status", "error", "report", "finished_at", "document", "updated_at"])
    cache.delete(_progress_key(run.pk))


def _progress_writer(run_id: int) -> Progress:
    last = 0.0

    def write(done: int, total: int) -> None:
        nonlocal last
        if done < total and time.monotonic() - last < _PROGRESS_EVERY_S:
            return
        last = time.monotonic()
        cache.set(_progress_key(run_id), (done, total), _PROGRESS_TTL_S)

    return write


def report_as_data(report: ImportReport) -> dict[str, Any]:
    """The report as JSON: versions by id, findings as lint gave them."""
    return {
        "upstream": report.upstream, "base_url": report.base_url, "title": report.title,
        "granted": list(report.granted),
        "removed": [asdict(r) for r in report.removed],
        "results": [
            {"key": r.key, "pointer": r.pointer, "outcome": r.outcome, "tool": r.tool,
             "changed": list(r.changed), "reason": r.reason, "note": r.note,
             "version": r.version.pk if r.version else None, "findings": [f.as_dict() for f in r.findings]}
            for r in report.results
        ],
    }


def report_of(run: OpenAPIImportRun) -> ImportReport | None:
    """The report a done run stored, its versions read again (one query)."""
    data = run.report
    if not data:
        return None
    versions = ToolVersion.objects.select_related("tool").in_bulk(
        [r["version"] for r in data["results"] if r["version"]]
    )
    results = tuple(
        OperationResult(
            key=r["key"], pointer=r["pointer"], outcome=r["outcome"], tool=r["tool"],
            changed=tuple(r["changed"]), reason=r["reason"], note=r.get("note", ""),
            version=versions.get(r["version"]),
            findings=tuple(Finding(**f) for f in r["findings"]),
        )
        for r in data["results"]
    )
    removed = tuple(RemovedOperation(**{**r, "published": tuple(r["published"]),
                                        "deprecated": tuple(r["deprecated"])}) for r in data["removed"])
    return ImportReport(upstream=data["upstream"], base_url=data["base_url"], title=data["title"],
                        results=results, granted=tuple(data["granted"]), removed=removed)
