"""Executors: the only code of the gateway with effects outside ToolHub."""

from __future__ import annotations

from typing import Any

from .base import ExecutionRequest, ReconcileAnswer
from .http import reconcile_http, run_http
from .python import reconcile_python, run_python

_RUNNERS = {"python": run_python, "http": run_http}
_RECONCILERS = {"python": reconcile_python, "http": reconcile_http}


def execute(kind: str, request: ExecutionRequest) -> Any:
    """Run one call with the executor of `kind`; raises the ExecutionError subclasses of base."""
    return _RUNNERS[kind](request)


def reconcile(kind: str, request: ExecutionRequest) -> ReconcileAnswer:
    """Ask the executor of `kind` what became of an uncertain call."""
    return _RECONCILERS[kind](request)
