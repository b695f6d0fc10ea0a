"""What governance costs around an imported GET tool's outbound call, taken apart.

    python -m bench.http_tool            in-process loops (below), then nothing else
    python -m bench.http_tool --load     the same, then the wrk pair of `make bench` (imported GET
                                         against the bench's bare view), in turns

Recreates the bench database (BENCH_DATABASE_URL) with the demo and the imported
`list_order_refunds` (one slot of orders only), and starts the bench's static upstream
(bench/static_refunds.py), which both the tool and the bare view call, as `make bench` does,
and gunicorn on BENCH_PORT for the loads. In this process, taking turns, `BENCH_PROFILE_CALLS` calls
each after a warm-up, CPU time of this process per call (its threads included; the provider's
CPU is gunicorn's and is not counted):

- `upstream_for_call` of the tool's upstream, as its executor asks it;
- `run_http`: the executor alone (the upstream, the request, the outbound call, the answer);
- a governed invoke of `list_order_refunds` against the bench's bare view making the same
  outbound call (both through Django's test client), and, for what governance costs around a
  python tool, a governed `search_orders` against the shop's bare search.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from .config import (
    ENV,
    PORT,
    PROFILE_CALLS,
    SECONDS,
    STATIC_UPSTREAM_PORT,
    THREADS,
    WORKERS,
    load_average,
    say,
)
from .database import seeded_bench
from .load import gunicorn

WARM_UP = 50
ROUNDS = 10
# The wrk pair takes turns this many times each, after a warm-up turn of 3 s.
LOAD_ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))


def _cpu_per_call(named: dict[str, Callable[[int], Any]], *, calls: int) -> dict[str, tuple[float, float]]:
    """(CPU ms, wall ms) per call of each function, taking turns in ROUNDS rounds."""
    for func in named.values():
        for i in range(WARM_UP):
            func(i)
    per_round = max(calls // ROUNDS, 1)
    spent = {name: [0.0, 0.0] for name in named}
    for round_number in range(ROUNDS):
        for name, func in named.items():
            cpu, wall = time.process_time(), time.perf_counter()
            for i in range(per_round):
                func(WARM_UP + round_number * per_round + i)
            spent[name][0] += time.process_time() - cpu
            spent[name][1] += time.perf_counter() - wall
    total = per_round * ROUNDS
    return {name: (cpu * 1000 / total, wall * 1000 / total) for name, (cpu, wall) in spent.items()}


def main() -> None:
    started_at = load_average()
    access = seeded_bench(bench_tools=True, order_slots=1)
    from django.db import close_old_connections
    from django.test import Client

    from apps.catalog.models import ToolVersion, VersionStatus
    from apps.gateway.executors.base import ExecutionRequest
    from apps.gateway.executors.http.executor import run_http
    from apps.tenancy.models import Agent
    from apps.upstreams.selectors import upstream_for_call

    from .calls import BARE_IMPORTED, IMPORTED_CALL
    from .config import BARE_SEARCH, SEARCH_ARGUMENTS
    from .in_process import _meta
    from .seed import IMPORTED_TOOL, REFUNDED_ORDER
    from .static_refunds import static_refunds_upstream
    agent = Agent.objects.get(tenant__slug="demo", name="support-bot")
    version = ToolVersion.objects.get(tool__name=IMPORTED_TOOL, status=VersionStatus.PUBLISHED)
    request = ExecutionRequest(
        tenant_slug="demo", tenant_id=agent.tenant_id, agent_id=agent.pk, task_id="bench", call_id="c1",
        tool_name=IMPORTED_TOOL, version_number=version.number, arguments={"order_id": REFUNDED_ORDER},
        timeout_s=version.timeout_s, config=version.executor_config, subject="u-1001",
        platform_owned=version.tool.tenant_id is None, readonly=True,
    )
    upstream = str(version.executor_config["upstream"])
    owner = None if request.platform_owned else request.tenant_id
    search, client = _meta(access.search), Client()

    def invoke(task: str, call: str) -> None:
        close_old_connections()  # what the WSGI handler does at the start of every request
        body = f'{{"task_id": "{task}", "call": {call}}}'
        answer = client.post("/api/v1/invoke", body, content_type="application/json", **search)
        if answer.status_code != 200 or b'"error"' in answer.content:
            raise SystemExit(f"a governed call failed: {answer.content[:300]!r}")

    def get(path: str) -> None:
        close_old_connections()
        if (answer := client.get(path)).status_code != 200:
            raise SystemExit(f"{path} answered {answer.status_code}: {answer.content[:300]!r}")

    search_call = json.dumps({"id": "c1", "name": "search_orders", "arguments": SEARCH_ARGUMENTS})
    with static_refunds_upstream(port=STATIC_UPSTREAM_PORT), \
            gunicorn(port=PORT, workers=WORKERS, threads=THREADS, env=ENV) as server:
        say(f"In-process, {PROFILE_CALLS} calls each (load average {load_average()}):")
        results = _cpu_per_call({
            "upstream_for_call": lambda i: upstream_for_call(
                tenant_id=owner, name=upstream, subject=request.subject, agent_id=request.agent_id
            ),
            "run_http (the executor, outbound call included)": lambda i: run_http(request),
            "governed list_order_refunds (imported GET)": lambda i: invoke(f"h-{i}", IMPORTED_CALL),
            "bare view calling the refunds endpoint": lambda i: get(BARE_IMPORTED),
            "governed search_orders (python tool)": lambda i: invoke(f"s-{i}", search_call),
            "bare DRF search": lambda i: get(BARE_SEARCH),
        }, calls=PROFILE_CALLS)
        for name, (cpu, wall) in results.items():
            say(f"  {name:<52} CPU {cpu:6.3f} ms   wall {wall:6.3f} ms")
        around_http = results["governed list_order_refunds (imported GET)"][0] - results[
            "bare view calling the refunds endpoint"][0]
        around_python = results["governed search_orders (python tool)"][0] - results["bare DRF search"][0]
        say(f"  governance around the outbound call: {around_http:.3f} ms of CPU; around the python "
            f"tool: {around_python:.3f} ms")
        if "--load" in sys.argv[1:]:
            from .over_http import Target, take_turns

            say(f"Loads, a warm-up turn, then {LOAD_ROUNDS} turns each (load average {load_average()}):")
            pair = [
                Target("bare_imported", "bare view calling the refunds endpoint", BARE_IMPORTED),
                Target("governed_imported", "governed list_order_refunds (imported GET)", "/api/v1/invoke",
                       access.search, kind="call", body=IMPORTED_CALL),
            ]
            take_turns(server, pair, seconds=3, rounds=1)
            loads = take_turns(server, pair, seconds=SECONDS, rounds=LOAD_ROUNDS)
            bare, governed = loads["bare_imported"], loads["governed_imported"]
            say(f"  governed/bare: req/s {governed.rps / bare.rps:.2f}, CPU per request "
                f"{governed.cpu_ms - bare.cpu_ms:+.2f} ms")
    say(f"Load average: {started_at} at start, {load_average()} at end.")


if __name__ == "__main__":
    main()
