"""The `python` executor: a registered callable, run on a worker thread under a deadline.

Python cannot kill a thread, so a callable that outlives its timeout keeps running in the
background while the caller answers `timeout`; that is why a timed-out write is `unknown`,
never `failed`. The worker threads close their database connections after each call.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.db import close_old_connections

from apps.common.errors import UnavailableError
from apps.common.request_context import in_current_context

from ..base import (
    ExecutionRejected,
    ExecutionRequest,
    ExecutionTimedOut,
    ReconcileAnswer,
    get_reconcile_callable,
    get_tool_callable,
)

_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="toolhub-exec")


def _in_worker(func: Any, request: ExecutionRequest) -> Any:
    close_old_connections()
    try:
        return func(request)
    finally:
        close_old_connections()


def run_python(request: ExecutionRequest) -> Any:
    name = request.config.get("callable", "")
    func = get_tool_callable(name)
    if func is None:
        raise ExecutionRejected(
            UnavailableError(
                f"The executor of {request.tool_name} is not installed on this server.",
                hint="This tool cannot run right now; tell the user and do not retry.",
            )
        )
    # The caller's context goes along, so the callable's log lines name its request or task.
    future = _POOL.submit(in_current_context(_in_worker), func, request)
    try:
        return future.result(timeout=request.timeout_s)
    except FutureTimeout:
        raise ExecutionTimedOut(f"{name} did not finish within {request.timeout_s} s") from None


def reconcile_python(request: ExecutionRequest) -> ReconcileAnswer:
    hook = get_reconcile_callable(request.config.get("reconcile") or request.config.get("callable", ""))
    if hook is None:
        return ReconcileAnswer(
            found=None, note="no reconcile hook is registered for this executor", retry=False
        )
    return _POOL.submit(in_current_context(_in_worker), hook, request).result(timeout=request.timeout_s)
