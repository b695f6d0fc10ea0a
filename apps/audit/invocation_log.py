"""The invocation log, written off the invoke hot path.

Rows are queued in memory and written by one background thread, one bulk write (COPY on
PostgreSQL) per batch, so a call pays no database round trip for its log line. `flush()`
writes what is queued now (used at shutdown and by tests); with TOOLHUB_INVOCATION_LOG_SYNC
the rows are written inline instead (the test default, where each test runs in its own
transaction).
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from typing import Any

from django.conf import settings
from django.db import DatabaseError, close_old_connections

from apps.common.db import bulk_append

from .models import Invocation

logger = logging.getLogger("toolhub.invocations")

_BATCH = 500
_INTERVAL_S = 0.2
_queue: queue.Queue[Invocation] = queue.Queue(maxsize=100_000)
_lock = threading.Lock()
_writer: threading.Thread | None = None


def invocation_record(**fields: Any) -> None:
    """Log one call. Never raises into the caller: a lost log line must not fail a call."""
    row = Invocation(**fields)
    if getattr(settings, "TOOLHUB_INVOCATION_LOG_SYNC", False):
        _write([row])
        return
    _ensure_writer()
    try:
        _queue.put_nowait(row)
    except queue.Full:
        logger.error("invocation log queue full; dropping the log line of %s", fields.get("call_id"))


def flush() -> None:
    """Write every queued row now, in the calling thread, and wait for the batch the
    background writer holds, so that nothing logged before the call is lost at exit."""
    rows: list[Invocation] = []
    while True:
        try:
            rows.append(_queue.get_nowait())
        except queue.Empty:
            break
    _write_queued(rows)
    _queue.join()


def _write(rows: list[Invocation]) -> None:
    if not rows:
        return
    try:
        bulk_append(rows)
    except DatabaseError:
        logger.exception("could not write %d invocation log rows", len(rows))


def _write_queued(rows: list[Invocation]) -> None:
    """Write rows taken from the queue, then mark them done for flush()."""
    try:
        _write(rows)
    finally:
        for _ in rows:
            _queue.task_done()


def _run_writer() -> None:
    while True:
        rows = [_queue.get()]
        try:
            while len(rows) < _BATCH:
                rows.append(_queue.get(timeout=_INTERVAL_S))
        except queue.Empty:
            pass
        close_old_connections()
        _write_queued(rows)


def _ensure_writer() -> None:
    global _writer
    if _writer is not None and _writer.is_alive():
        return
    with _lock:
        if _writer is None or not _writer.is_alive():
            _writer = threading.Thread(target=_run_writer, name="toolhub-invocation-log", daemon=True)
            _writer.start()


atexit.register(flush)
