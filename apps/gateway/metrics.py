"""The invoke pipeline's Prometheus metrics, kept apart from the orchestration that feeds them.

services.py only calls `timed(stage)` around its layers and `invocation_observed` once per
call. Under gunicorn the values live in PROMETHEUS_MULTIPROC_DIR (gunicorn.conf.py) and
/metrics adds up every worker process; elsewhere they are in-process.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, ParamSpec, TypeVar

from prometheus_client import Counter, Histogram

INVOCATIONS = Counter(
    "toolhub_invocations",
    "Tool calls answered, by tool, envelope status and error kind (empty unless status is error).",
    ["tool", "status", "kind"],
)
STAGE_SECONDS = Histogram(
    "toolhub_invoke_stage_seconds",
    "Time spent per call in each layer: validation (every check before execution), execution "
    "(ledger and executor; for async calls the enqueue), shaping (envelope and truncation), "
    "and call (the whole call as the invocation log records it).",
    ["stage"],
    # From a cache-only refusal to the longest tool timeout (600 s).
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600),
)

VALIDATION, EXECUTION, SHAPING, CALL = "validation", "execution", "shaping", "call"

# Tool names come from the model: a label per invented name would grow without bound. Names
# that do not look like a tool, unknown tools, and any name past the cap share one label.
UNKNOWN_TOOL_LABEL = "(unknown)"
MAX_TOOL_LABELS = 500
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_tool_labels: set[str] = set()
_tool_labels_lock = threading.Lock()

P = ParamSpec("P")
R = TypeVar("R")


def timed(stage: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: observe the wrapped function's duration, raised or not, under `stage`."""
    histogram = STAGE_SECONDS.labels(stage=stage)

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            started = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                histogram.observe(time.perf_counter() - started)

        return wrapper

    return decorate


def tool_label(name: str, *, kind: str) -> str:
    """`name` as a label value, or UNKNOWN_TOOL_LABEL when it could make labels unbounded."""
    if kind == "unknown_tool" or not _TOOL_NAME.fullmatch(name):
        return UNKNOWN_TOOL_LABEL
    if name in _tool_labels:
        return name
    with _tool_labels_lock:
        if len(_tool_labels) >= MAX_TOOL_LABELS:
            return UNKNOWN_TOOL_LABEL
        _tool_labels.add(name)
    return name


_CALL_SECONDS = STAGE_SECONDS.labels(stage=CALL)
# The counters of INVOCATIONS by their labels: prometheus_client's own lookup (label values
# checked and converted, under a lock) cost more than the increment. Bounded as the labels are.
_invocation_counters: dict[tuple[str, str, str], Any] = {}


def invocation_observed(*, tool: str, envelope: dict[str, Any], started: float) -> None:
    """Count one answered call and observe its whole duration since `started` (perf_counter)."""
    kind = str(envelope.get("kind", "")) if envelope.get("status") == "error" else ""
    _invocation_counter(tool_label(tool, kind=kind), str(envelope.get("status", "")), kind).inc()
    _CALL_SECONDS.observe(time.perf_counter() - started)


def invocation_series_start(tools: Iterable[str]) -> None:
    """Start each tool's series of successful calls at zero, as Prometheus advises for label
    values known in advance: a rate over it is defined from the process's start, and the first
    call of the tool does not make it (under gunicorn the first series of a process also opens
    its file of values, ~0.4 ms)."""
    for tool in tools:
        _invocation_counter(tool_label(tool, kind=""), "ok", "")


def _invocation_counter(tool: str, status: str, kind: str) -> Any:
    labels = (tool, status, kind)
    counter = _invocation_counters.get(labels)
    if counter is None:
        counter = INVOCATIONS.labels(tool=tool, status=status, kind=kind)
        counter = _invocation_counters.setdefault(labels, counter)
    return counter
