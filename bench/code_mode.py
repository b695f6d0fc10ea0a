"""Code mode in `make bench` (`python -m bench.run --code`: only this; `python -m
bench.code_mode`: the start-up alone, on the settings' database).

Start-up: what a run of `result = 1` costs, from `run_code` called to its report, with a
sandbox of the warm pool and with one started for the run (bubblewrap and the interpreter:
the cost the pool hides). The code does nothing, so what is measured is the sandbox: taking
or starting it, sending the code, reading the outcome, and stopping it (its scratch
directory deleted). Each warm run waits first for the pool to be full again, so every one of
them is served warm.

Inner calls: what one governed `search_orders` costs made by a run's code, timed inside the
sandbox around each call (the channel both ways and the whole pipeline), against the same
calls made directly in-process by the invoke layer (`invoke_as`, the pipeline alone). Both
in one process, one call after another, the calls of each side differing only in `limit`,
so loop detection never sees a repeat.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from datetime import timedelta

RUNS = int(os.environ.get("BENCH_CODE_MODE_RUNS", "30"))
INNER_CALLS = int(os.environ.get("BENCH_CODE_MODE_CALLS", "50"))
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
            out.append(f"{name:<52}{statistics.median(series):>9.1f}{_p95(series):>9.1f}")
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


@dataclass(frozen=True)
class InnerCallFigures:
    """Durations of the same governed calls, in ms: made by a run's code, and made directly."""

    inner_ms: list[float]
    direct_ms: list[float]

    def lines(self) -> list[str]:
        inner, direct = statistics.median(self.inner_ms), statistics.median(self.direct_ms)
        return [
            "", f"code mode, governed search_orders, {len(self.inner_ms)} calls each, one after another",
            f"{'':<52}{'p50 ms':>9}{'p95 ms':>9}",
            f"{'direct: the invoke layer in-process':<52}{direct:>9.2f}{_p95(self.direct_ms):>9.2f}",
            f"{'inner: from a run, timed inside the sandbox':<52}{inner:>9.2f}{_p95(self.inner_ms):>9.2f}",
            f"an inner call costs {inner - direct:+.2f} ms at p50 beside a direct one "
            f"({inner / direct:.2f}x)",
        ]


def _p95(series: list[float]) -> float:
    return statistics.quantiles(series, n=20)[-1] if len(series) > 1 else series[0]


def measure_inner_calls(calls: int = INNER_CALLS) -> InnerCallFigures:
    """`calls` governed search_orders of u-1001 from a run's code and directly; the demo seeded."""
    from django.utils import timezone

    from apps.gateway.contracts import InvokeOptions, ToolCall
    from apps.gateway.executors.base import ExecutionRequest
    from apps.gateway.executors.sandbox.executor import run_sandbox
    from apps.gateway.services import invoke_as
    from apps.tenancy.authentication import AgentPrincipal
    from apps.tenancy.models import Agent
    from apps.tenancy.sessions import SessionClaims

    agent = Agent.objects.select_related("tenant").get(tenant__slug="demo", name="support-bot")
    principal = AgentPrincipal(agent_id=agent.pk, agent_name=agent.name, tenant_id=agent.tenant_id,
                               tenant_slug=agent.tenant.slug, key_id=0)
    session = SessionClaims(tenant_id=agent.tenant_id, agent_id=agent.pk, subject="u-1001",
                            expires_at=timezone.now() + timedelta(hours=1))
    run = time.time_ns()
    search = {"status": "paid", "start_date": "2026-01-01", "end_date": "2026-01-31"}
    direct = []
    options = InvokeOptions(task_id=f"bench-direct-{run}", toolset="support", phase="resolve")
    for limit in range(1, calls + 1):
        call = ToolCall(call_id=f"c{limit}", name="search_orders", arguments={**search, "limit": limit})
        started = time.perf_counter()
        envelope = invoke_as(principal=principal, session=session, options=options, calls=[call])[0]
        direct.append((time.perf_counter() - started) * 1000)
        if envelope["status"] != "ok":
            raise RuntimeError(f"a direct call failed: {envelope}")
    code = (
        "import time\nresult = []\n"
        f"for limit in range(1, {calls + 1}):\n"
        "    started = time.perf_counter()\n"
        f"    tools.search_orders(**{search!r}, limit=limit)\n"
        "    result.append((time.perf_counter() - started) * 1000)\n"
    )
    request = ExecutionRequest(
        tenant_slug=agent.tenant.slug, tenant_id=agent.tenant_id, agent_id=agent.pk,
        task_id=f"bench-inner-{run}", call_id="run_1", tool_name="run_python", version_number=1,
        arguments={"code": code}, timeout_s=60, config={"max_calls": 100}, subject="u-1001",
        toolset="support", phase="resolve",
    )
    answer = run_sandbox(request)
    return InnerCallFigures(inner_ms=list(answer["result"]), direct_ms=direct)


def main() -> None:
    from .config import ENV, say

    os.environ.update({**ENV, "LOG_LEVEL": "WARNING"})
    import django

    django.setup()
    for line in measure_code_mode().lines():
        say(line)


if __name__ == "__main__":
    main()
