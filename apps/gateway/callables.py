"""What an app needs to provide `python` tools, without reaching into the executors.

An app registers a function as the callable a version's `executor_config` names
(`tool_callable`), or as its reconcile hook (`reconcile_callable`), when Django starts
(its AppConfig.ready). The function takes the ExecutionRequest and returns JSON-able data,
raises ExecutionRejected with the error the model reads, and a hook answers ReconcileAnswer.
"""

from __future__ import annotations

from .executors.base import (
    ExecutionRejected,
    ExecutionRequest,
    ReconcileAnswer,
    ReconcileCallable,
    ToolCallable,
    get_reconcile_callable,
    get_tool_callable,
    reconcile_callable,
    tool_callable,
)

__all__ = [
    "ExecutionRejected",
    "ExecutionRequest",
    "ReconcileAnswer",
    "ReconcileCallable",
    "ToolCallable",
    "get_reconcile_callable",
    "get_tool_callable",
    "reconcile_callable",
    "tool_callable",
]
