"""Executors: the only code of the gateway with effects outside ToolHub.

One package per kind (python/, http/, mcp/), each registering its Executor in its
`__init__.py` (registry.py); base.py holds what every kind takes, returns and raises, and
egress.py and answer_limit.py what every kind's connections go through.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

from apps.common.errors import UnavailableError

from .base import ExecutionRejected, ExecutionRequest, ReconcileAnswer
from .registry import Executor, UnknownExecutorKind, discover, executor_for, register, registered

__all__ = [
    "Executor",
    "UnknownExecutorKind",
    "discover",
    "execute",
    "executor_for",
    "reconcile",
    "register",
    "registered",
]


def execute(kind: str, request: ExecutionRequest) -> Any:
    """Run one call with the executor of `kind`; raises the ExecutionError subclasses of base.

    Never inside a database transaction: the intent must be committed before anything runs,
    and a slow upstream must not hold row locks (raises AssertionError otherwise). A kind no
    executor is registered for is refused (`unavailable`, nothing sent).
    """
    if _in_transaction():
        raise AssertionError(f"the {kind} executor was called inside a database transaction")
    try:
        executor = executor_for(kind)
    except UnknownExecutorKind as unknown:
        raise ExecutionRejected(
            UnavailableError(
                f"The executor of {request.tool_name} is not installed on this server.",
                hint="This tool cannot run right now; tell the user and do not retry.",
            )
        ) from unknown
    return executor.run(request)


def _in_transaction() -> bool:
    # A test case wraps each test in atomic blocks of its own, marked as such; they do not
    # count, as for Django's durable blocks.
    return connection.in_atomic_block and any(
        not getattr(block, "_from_testcase", False) for block in connection.atomic_blocks
    )


def reconcile(kind: str, request: ExecutionRequest) -> ReconcileAnswer:
    """Ask the executor of `kind` what became of an uncertain call. For a kind no executor is
    registered for, nobody can: straight to triage."""
    try:
        executor = executor_for(kind)
    except UnknownExecutorKind as unknown:
        return ReconcileAnswer(found=None, note=str(unknown), retry=False)
    return executor.reconcile(request)
