"""Code mode's start-up (`python -m bench.code_mode`): what a run of `result = 1` costs, from
`run_code` called to its report, with a sandbox of the warm pool and with one started for
the run (bubblewrap and the interpreter: the cost the pool hides).

The code does nothing, so what is measured is the sandbox: taking or starting it, sending
the code, reading the outcome, and stopping it (its scratch directory deleted). Each warm
run waits first for the pool to be full again, so every one of them is served warm.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass

RUNS = int(os.environ.get("BENCH_CODE_MODE_RUNS", "30"))
WARM_UP_RUNS = 3
REFILL_TIMEOUT_S = 30.0
CODE = "result = 1"


@dataclass(frozen=True)
class StartupFigures:
    """Durations of runs of `result = 1`, in ms."""

    warm_ms: list[float]
    cold_ms: list[float]

    @property
    def warm_p50_ms(self) -> float:
        return statistics.median(self.warm_ms)

    @property
    def cold_p50_ms(self) -> float:
        return statistics.median(self.cold_ms)

    def lines(self) -> list[str]:
        out = ["", f"code mode, `{CODE}`, {len(self.warm_ms)} runs each, one after another",
               f"{'':<52}{'p50 ms':>9}{'p95 ms':>9}"]
        for name, series in (("warm: a sandbox of the pool", self.warm_ms),
                             ("cold: bubblewrap and the interpreter started", self.cold_ms)):
            p95 = statistics.quantiles(series, n=20)[-1] if len(series) > 1 else series[0]
            out.append(f"{name:<52}{statistics.median(series):>9.1f}{p95:>9.1f}")
        return out + [f"the pool saves {self.cold_p50_ms - self.warm_p50_ms:.1f} ms a run at p50 "
                      f"({self.cold_p50_ms / self.warm_p50_ms:.1f}x)"]


def measure_code_mode(runs: int = RUNS) -> StartupFigures:
    """Runs `CODE` `runs` times from the warm pool, then `runs` times cold (a pool keeping
    none warm); Django must be set up."""
    from django.test import override_settings

    from apps.gateway.executors.sandbox.pool import stop_pool, warm_pool
    from apps.gateway.executors.sandbox.runs import RunLimits

    limits = RunLimits()
    with override_settings(TOOLHUB_SANDBOX_WARM=max(1, _configured_warm())):
        stop_pool()
        for _ in range(WARM_UP_RUNS):
            _timed_run(limits)
        warm = []
        for _ in range(runs):
            if not warm_pool().wait_filled(limits.spawn(), timeout_s=REFILL_TIMEOUT_S):
                raise RuntimeError("the warm pool did not refill in time")
            warm.append(_timed_run(limits))
    with override_settings(TOOLHUB_SANDBOX_WARM=0):
        stop_pool()
        cold = [_timed_run(limits) for _ in range(runs)]
        stop_pool()
    return StartupFigures(warm_ms=warm, cold_ms=cold)


def _configured_warm() -> int:
    from django.conf import settings

    return int(settings.TOOLHUB_SANDBOX_WARM)


def _timed_run(limits: object) -> float:
    from apps.gateway.executors.sandbox.runs import RunLimits, run_code

    assert isinstance(limits, RunLimits)
    started = time.perf_counter()
    report = run_code(CODE, tool_names=(), limits=limits, call_tool=_no_tools)
    elapsed = (time.perf_counter() - started) * 1000
    if report.result != 1:
        raise RuntimeError(f"the run failed: {report}")
    return elapsed


def _no_tools(call: object) -> dict[str, object]:
    raise AssertionError("`result = 1` calls no tool")


def main() -> None:
    from .config import ENV, say

    os.environ.update({**ENV, "LOG_LEVEL": "WARNING"})
    import django

    django.setup()
    for line in measure_code_mode().lines():
        say(line)


if __name__ == "__main__":
    main()
