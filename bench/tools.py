"""Executors of the bench-only tools.

`bench_wait` stands for a slow read (a search upstream that takes 200 ms): it does nothing
but wait, so a batch of them measures the gateway's concurrency and nothing else. It is
not a demo tool because no agent should ever be offered it.
"""

from __future__ import annotations

import time
from typing import Any

from apps.gateway.callables import ExecutionRequest, tool_callable

WAIT_CALLABLE = "bench.wait"


@tool_callable(WAIT_CALLABLE)
def bench_wait(request: ExecutionRequest) -> dict[str, Any]:
    """Sleeps `ms` milliseconds and says so."""
    started = time.perf_counter()
    time.sleep(request.arguments["ms"] / 1000)
    return {"label": request.arguments["label"], "slept_ms": round((time.perf_counter() - started) * 1000, 1)}
