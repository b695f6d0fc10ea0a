"""What every executor takes, returns and raises.

Executors are the only code that changes the outside world. They never run inside a
database transaction, and they classify every failure by what is known about the side
effect: certainly not applied (`ExecutionRejected`, `ExecutionNotSent`), or possibly
applied (`ExecutionTimedOut`, `ExecutionAmbiguous`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apps.common.errors import ToolHubError


@dataclass(frozen=True)
class ExecutionRequest:
    tenant_slug: str
    task_id: str
    call_id: str
    tool_name: str
    version_number: int
    arguments: Mapping[str, Any]
    timeout_s: float
    config: Mapping[str, Any]
    subject: str = ""
    idempotency_key: str | None = None
    # The tool is in the shared catalog: only then may its config name platform secrets.
    platform_owned: bool = False
    # The calling tenant: whose upstreams and credentials the call may use.
    tenant_id: int | None = None
    # The calling agent: an end user's own token is sent only for the agent that registered it.
    agent_id: int | None = None
    # A readonly or recomputable call changes nothing: sending it again is always safe.
    readonly: bool = False
    # Where the call was made and for whom: what a code run's inner calls are made in.
    toolset: str | None = None
    phase: str | None = None
    session_attributes: Mapping[str, Any] = field(default_factory=dict)
    # The call's ledger entry (None for a read run without one).
    execution_id: str | None = None
    # The upstreams' generation as validation read it (None: upstream_for_call reads it).
    upstream_generation: int | None = None


class ExecutionError(Exception):
    """Base of executor failures; never shown to the model as it is."""


class ExecutionRejected(ExecutionError):
    """The tool refused the call for a documented reason; nothing was applied."""

    def __init__(self, error: ToolHubError) -> None:
        super().__init__(error.message)
        self.error = error


class ExecutionNotSent(ExecutionError):
    """The request never reached the external system (e.g. connection refused)."""


class ExecutionTimedOut(ExecutionError):
    """No answer in time: the side effect may or may not have happened."""


class ExecutionAmbiguous(ExecutionError):
    """The external system failed after receiving the request: outcome unknown."""


class AnswerTooLarge(ExecutionAmbiguous):
    """The answer went past TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES and was not read: the request
    was sent, so a write's outcome is unknown."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is larger than {limit} bytes (TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES)")
        self.limit = limit


@dataclass(frozen=True)
class ReconcileAnswer:
    """What a reconcile hook found out about an uncertain execution."""

    found: bool | None  # True: it happened; False: it certainly did not; None: still unclear
    result: Any = None
    note: str = ""
    # False when asking again cannot help (no hook, no status endpoint): straight to triage.
    retry: bool = True


ToolCallable = Callable[[ExecutionRequest], Any]
ReconcileCallable = Callable[[ExecutionRequest], ReconcileAnswer]

_CALLABLES: dict[str, ToolCallable] = {}
_RECONCILERS: dict[str, ReconcileCallable] = {}


def tool_callable(name: str) -> Callable[[ToolCallable], ToolCallable]:
    """Register a function as the `python` executor named `name` in executor_config."""

    def register(func: ToolCallable) -> ToolCallable:
        _CALLABLES[name] = func
        return func

    return register


def reconcile_callable(name: str) -> Callable[[ReconcileCallable], ReconcileCallable]:
    """Register a function as the reconcile hook named `name` in executor_config."""

    def register(func: ReconcileCallable) -> ReconcileCallable:
        _RECONCILERS[name] = func
        return func

    return register


def get_tool_callable(name: str) -> ToolCallable | None:
    return _CALLABLES.get(name)


def get_reconcile_callable(name: str) -> ReconcileCallable | None:
    return _RECONCILERS.get(name)
