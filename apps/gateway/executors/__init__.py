"""Executors: the only code of the gateway with effects outside ToolHub."""

from __future__ import annotations

from typing import Any

from django.db import connection

from .base import ExecutionRequest, ReconcileAnswer
from .http.executor import reconcile_http, run_http
from .mcp.executor import reconcile_mcp, run_mcp
from .python.executor import reconcile_python, run_python

_RUNNERS = {"python": run_python, "http": run_http, "mcp": run_mcp}
_RECONCILERS = {"python": reconcile_python, "http": reconcile_http, "mcp": reconcile_mcp}


def execute(kind: str, request: ExecutionRequest) -> Any:
    """Run one call with the executor of `kind`; raises the ExecutionError subclasses of base.

    Never inside a database transaction: the intent must be committed before anything runs,
    and a slow upstream must not hold row locks (raises AssertionError otherwise).
    """
    if _in_transaction():
        raise AssertionError(f"the {kind} executor was called inside a database transaction")
    return _RUNNERS[kind](request)


def _in_transaction() -> bool:
    # A test case wraps each test in atomic blocks of its own, marked as such; they do not
    # count, as for Django's durable blocks.
    return connection.in_atomic_block and any(
        not getattr(block, "_from_testcase", False) for block in connection.atomic_blocks
    )


def reconcile(kind: str, request: ExecutionRequest) -> ReconcileAnswer:
    """Ask the executor of `kind` what became of an uncertain call."""
    return _RECONCILERS[kind](request)
