"""Python executors registered for the gateway tests: each records that it ran."""

from __future__ import annotations

import threading
import time
from collections import Counter

from apps.common.errors import BusinessRuleError
from apps.gateway.executors.base import (
    ExecutionRejected,
    ExecutionRequest,
    ExecutionTimedOut,
    ReconcileAnswer,
    reconcile_callable,
    tool_callable,
)

RUNS: Counter[str] = Counter()
_LOCK = threading.Lock()


def _ran(name: str) -> None:
    with _LOCK:
        RUNS[name] += 1


@tool_callable("tests.echo")
def echo(request: ExecutionRequest) -> dict:
    _ran("tests.echo")
    return {"echo": dict(request.arguments)}


@tool_callable("tests.items")
def items(request: ExecutionRequest) -> list[dict]:
    _ran("tests.items")
    return [
        {"n": n, "status": "paid" if n % 2 else "pending", "text": "x" * 40}
        for n in range(request.arguments["count"])
    ]


@tool_callable("tests.slow")
def slow(request: ExecutionRequest) -> dict:
    _ran("tests.slow")
    time.sleep(request.arguments["sleep_ms"] / 1000)
    return {"slept_ms": request.arguments["sleep_ms"]}


@tool_callable("tests.reject")
def reject(request: ExecutionRequest) -> dict:
    _ran("tests.reject")
    raise ExecutionRejected(
        BusinessRuleError("The order is already cancelled.", hint="Look the order up first.")
    )


@tool_callable("tests.crash")
def crash(request: ExecutionRequest) -> dict:
    _ran("tests.crash")
    raise RuntimeError("secret internal detail")


# ("start" | "end", call id), in the order they happened: what overlapped is what started
# before the other ended, whatever the clock says on a loaded machine.
TIMELINE: list[tuple[str, str]] = []
_TIMELINE_CHANGED = threading.Condition()


def _running() -> int:
    return sum(1 if kind == "start" else -1 for kind, _ in TIMELINE)


@tool_callable("tests.timed")
def timed(request: ExecutionRequest) -> dict:
    """Records its start, waits (when asked) until `meet` calls run at once, itself included,
    sleeps, and records its end, so tests can see what overlapped."""
    _ran("tests.timed")
    meet = request.arguments.get("meet", 0)
    with _TIMELINE_CHANGED:
        TIMELINE.append(("start", request.call_id))
        _TIMELINE_CHANGED.notify_all()
        # Calls run one after another never meet: the wait gives up, and the test sees no overlap.
        _TIMELINE_CHANGED.wait_for(lambda: _running() >= meet, timeout=10)
    time.sleep(request.arguments["sleep_ms"] / 1000)
    with _TIMELINE_CHANGED:
        TIMELINE.append(("end", request.call_id))
    return {"call": request.call_id, "items": list(range(request.arguments.get("count", 1)))}


# What the test reconcile hook answers, by idempotency key (absent: "still unclear").
RECONCILE_ANSWERS: dict[str, ReconcileAnswer] = {}


@tool_callable("tests.write_later_checked")
def write_later_checked(request: ExecutionRequest) -> dict:
    _ran("tests.write_later_checked")
    raise ExecutionTimedOut("no answer in time")


@reconcile_callable("tests.write_later_checked")
def check_write(request: ExecutionRequest) -> ReconcileAnswer:
    return RECONCILE_ANSWERS.get(
        request.idempotency_key or "", ReconcileAnswer(found=None, note="provider busy")
    )
