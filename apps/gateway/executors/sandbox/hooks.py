"""How a code run's tool calls reach the invoke layer, which the executors may not import.

The gateway's invoke layer (apps/gateway/code_runs.py) registers a factory when the app is
ready; the executor asks it, per run, for the tools the code may call and for the function
that makes one call through the whole pipeline, as the agent that started the run, in its
task and end-user session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..base import ExecutionRequest
from .runs import InnerCall


@dataclass(frozen=True)
class RunCalls:
    """What the code of one run may call, and how a call is made (it answers an envelope)."""

    tool_names: Sequence[str]
    call: Callable[[InnerCall], Mapping[str, Any]]


RunCallsFactory = Callable[[ExecutionRequest], RunCalls]

_FACTORY: list[RunCallsFactory] = []


def register_run_calls(factory: RunCallsFactory) -> None:
    """Register (or register again, replacing) how runs make their tool calls."""
    _FACTORY[:] = [factory]


def run_calls(request: ExecutionRequest) -> RunCalls:
    """The tool calls of the run `request` asks for. Raises the ToolHubError that refuses the
    whole run (its agent or its place is gone); RuntimeError before the gateway is ready."""
    if not _FACTORY:
        raise RuntimeError("no code-run call factory is registered (the gateway app is not ready)")
    return _FACTORY[0](request)
