"""The invocation log, written off the invoke hot path.

Rows are queued in memory and written by one background thread, one bulk write (COPY on
PostgreSQL) per batch of what a fifth of a second brought, so a call pays no database
round trip for its log line, nor the writer's wake-up. `flush()`
writes what is queued now (used at shutdown and by tests); with TOOLHUB_INVOCATION_LOG_SYNC
the rows are written inline instead (the test default, where each test runs in its own
transaction).

A row whose content the database refuses (a NUL in a tool's result: PostgreSQL stores it
in neither JSON nor text) fails the whole bulk write; the batch is then written row by row,
and that row is stored with its envelope replaced by a note saying why. A row that cannot
be written at all is logged. Both are counted in toolhub_invocation_log_failures_total.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DatabaseError, DataError, close_old_connections
from prometheus_client import Counter

from apps.common.db import bulk_append

from .models import Invocation

logger = logging.getLogger("toolhub.invocations")

_BATCH = 500
_INTERVAL_S = 0.2
_queue: queue.Queue[Invocation] = queue.Queue(maxsize=100_000)
_lock = threading.Lock()
_writer: threading.Thread | None = None

FAILURES = Counter(
    "toolhub_invocation_log_failures",
    "Invocation log rows not written as given: envelope_replaced (stored with a note instead of "
    "an envelope the database refused), lost (not written: database unreachable, queue full).",
    ["outcome"],
)
ENVELOPE_REPLACED, LOST = "envelope_replaced", "lost"


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
        FAILURES.labels(outcome=LOST).inc()
        logger.error("invocation log queue full; dropping the log line of %s", fields.get("call_id"))


def invocation_log_writer_start() -> None:
    """Start the background writer now (a serving process, before its first call), unless
    rows are written inline."""
    if not getattr(settings, "TOOLHUB_INVOCATION_LOG_SYNC", False):
        _ensure_writer()


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
    except DataError:
        _write_one_by_one(rows)
    except DatabaseError:
        _lost(rows)


def _write_one_by_one(rows: list[Invocation]) -> None:
    """One refused row fails a bulk write for all: one by one, only that row loses its envelope."""
    for index, row in enumerate(rows):
        try:
            _write_with_envelope_if_accepted(row)
        except DataError:
            _lost([row])
        except DatabaseError:
            _lost(rows[index:])
            return


def _write_with_envelope_if_accepted(row: Invocation) -> None:
    try:
        bulk_append([row])
    except DataError as exc:
        reason = _first_line(exc)
        bulk_append([_with_envelope_replaced(row, reason=reason)])
        FAILURES.labels(outcome=ENVELOPE_REPLACED).inc()
        logger.error("invocation log row of call %s stored without its envelope: %s", row.call_id, reason)


def _first_line(exc: Exception) -> str:
    """What the database said, without the lines after it that quote the refused data."""
    lines = str(exc).splitlines()
    return f"{type(exc).__name__}: {lines[0][:200] if lines else 'no message'}"


def _with_envelope_replaced(row: Invocation, *, reason: str) -> Invocation:
    """The row with a note in place of its envelope, and its text columns free of NUL."""
    row.envelope = {
        "envelope_not_stored": f"The envelope could not be stored: the database refused it ({reason}). "
        "Status, kind and sizes are the call's own."
    }
    for field in ("task_id", "call_id", "tool_name", "status", "kind"):
        setattr(row, field, getattr(row, field).replace("\x00", "\ufffd"))
    return row


def _lost(rows: list[Invocation]) -> None:
    FAILURES.labels(outcome=LOST).inc(len(rows))
    logger.exception(
        "could not write %d invocation log rows (calls %s)",
        len(rows),
        ", ".join(row.call_id for row in rows[:20]),
    )


def _write_queued(rows: list[Invocation], *, then: Callable[[], None] | None = None) -> None:
    """Write rows taken from the queue, then mark them done for flush()."""
    try:
        _write(rows)
        if then is not None:
            then()
    finally:
        for _ in rows:
            _queue.task_done()


def _run_writer() -> None:
    while True:
        rows = [_queue.get()]
        if _queue.qsize() < _BATCH - 1:
            # The rows of the next moments gather for one batch without waking this thread:
            # a wake-up per row cost a call more CPU than writing its row.
            time.sleep(_INTERVAL_S)
        try:
            while len(rows) < _BATCH:
                rows.append(_queue.get_nowait())
        except queue.Empty:
            pass
        close_old_connections()
        # Closed again after the write, as at the end of a request, when CONN_MAX_AGE says so.
        _write_queued(rows, then=close_old_connections)


def _ensure_writer() -> None:
    global _writer
    if _writer is not None and _writer.is_alive():
        return
    with _lock:
        if _writer is None or not _writer.is_alive():
            _writer = threading.Thread(target=_run_writer, name="toolhub-invocation-log", daemon=True)
            _writer.start()


atexit.register(flush)
