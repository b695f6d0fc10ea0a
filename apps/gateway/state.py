"""State readers: what a `state_limit` rule needs from the outside world, read before the
pure business rules stage runs (apps/gateway/pipeline/rules.py).

A reader is a registered function `reader(arguments, context) -> StateLimit | None`: for the
call's arguments (bound fields already filled from the session), the most its rule's field
may be now, or None when it finds nothing to judge (an object that does not exist for this
user: the executor then answers, so another user's object still looks like a missing one).
It may read a database or ask a system; it raises a ToolHubError to refuse the call itself
(`unavailable` when the system cannot be asked: a rule is never skipped).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from .contracts import CallContext, CallState, PreparedCall, StateLimit
from .pipeline.rules import state_readers_needed

StateReader = Callable[[Mapping[str, Any], CallContext], StateLimit | None]

_readers: dict[str, StateReader] = {}


def state_reader(name: str) -> Callable[[StateReader], StateReader]:
    """Register `func` as the state reader `name`; another function under a taken name is
    refused, so two readers never silently swap."""

    def register(func: StateReader) -> StateReader:
        existing = _readers.get(name)
        if existing is not None and existing.__qualname__ != func.__qualname__:
            raise ValueError(f"state reader {name!r} is already registered by {existing.__qualname__}")
        _readers[name] = func
        return func

    return register


def read_call_state(prepared: PreparedCall, context: CallContext) -> CallState:
    """Run the readers the call's state rules name, once each. A reader that is not
    registered is left out: the rule stage then makes the tool unavailable."""
    names = state_readers_needed(prepared.version, prepared.policy)
    if not names:
        return CallState()
    arguments = MappingProxyType(dict(prepared.arguments))
    return CallState(limits=MappingProxyType(
        {name: _readers[name](arguments, context) for name in names if name in _readers}
    ))
