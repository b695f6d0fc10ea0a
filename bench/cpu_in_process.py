"""CPU per call of the agent API's request path, in-process: `python -m bench.cpu_in_process`.

The stage profile (bench/stage_profile.py) reads wall time, which on a shared machine moves
with everyone's load. This reads the process's CPU time (every thread: the request's, the
executor's, the invocation log's writer) over the same calls through Django's test client,
the scenarios taking turns, with Prometheus in multiprocess mode as under gunicorn.
PostgreSQL's and Redis's own CPU is not counted.

    python -m bench.cpu_in_process                    fresh bench database, 400 calls each
    python -m bench.cpu_in_process --cprofile FILE    also pstats of the governed read to FILE
    python -m bench.cpu_in_process --only REST        only the scenarios whose name says so
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from .config import say
from .database import seeded_bench


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--cprofile", default="")
    parser.add_argument("--only", default="", help="only the scenarios whose name contains this")
    args = parser.parse_args()
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="toolhub-bench-metrics-"))
    access = seeded_bench(bench_tools=True)
    scenarios = {name: request for name, request in _scenarios(access).items() if args.only in name}
    for request in scenarios.values():
        for i in range(20):
            request(-1 - i)
    cpu: dict[str, float] = defaultdict(float)
    wall: dict[str, float] = defaultdict(float)
    per_round = args.calls // args.rounds
    for round_number in range(args.rounds):
        for name, request in scenarios.items():
            started_cpu, started = time.process_time(), time.perf_counter()
            for i in range(round_number * per_round, (round_number + 1) * per_round):
                request(i)
            cpu[name] += time.process_time() - started_cpu
            wall[name] += time.perf_counter() - started
    calls = per_round * args.rounds
    say(f"CPU of this process per call, mean of {calls} in-process calls, scenarios taking turns:")
    for name in scenarios:
        say(f"  {name:<44}{cpu[name] / calls * 1000:>7.3f} ms CPU  {wall[name] / calls * 1000:>7.3f} ms wall")
    if args.cprofile and "governed search_orders (REST invoke)" in scenarios:
        # CPU time of the request thread, not wall time: waiting on Redis or PostgreSQL is free.
        profiler = cProfile.Profile(time.thread_time)
        read = scenarios["governed search_orders (REST invoke)"]
        profiler.enable()
        for i in range(calls, 2 * calls):
            read(i)
        profiler.disable()
        profiler.dump_stats(args.cprofile)
        say(f"pstats (request thread CPU) of {calls} governed reads: {args.cprofile}")


def _scenarios(access: Any) -> dict[str, Callable[[int], Any]]:
    from django.db import close_old_connections
    from django.test import Client

    from .calls import bare_cancel_body, cancel_arguments, invoke_body
    from .config import BARE_SEARCH, SEARCH_ARGUMENTS, SPARE_SLOT
    from .in_process import _meta
    from .seed import order_slot

    client = Client()
    run = uuid.uuid4().hex[:8]
    search, cancel, shop = _meta(access.search), _meta(access.cancel), _meta(access.shop)
    # Orders of the spare slot no other measurement of a fresh database cancels.
    governed_orders, bare_orders = order_slot(SPARE_SLOT) + 40_000, order_slot(SPARE_SLOT) + 70_000
    mcp = {**search, "HTTP_ACCEPT": "application/json, text/event-stream"}
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
    answer = client.post("/mcp", json.dumps(hello), content_type="application/json", **mcp)
    mcp |= {"HTTP_MCP_SESSION_ID": answer.headers["Mcp-Session-Id"],
            "HTTP_MCP_PROTOCOL_VERSION": "2025-06-18"}
    search_params = {"name": "search_orders", "arguments": json.loads(SEARCH_ARGUMENTS)}

    def post(path: str, body: str, headers: dict[str, str]) -> Any:
        close_old_connections()  # what the WSGI handler does at the start of every request
        response = client.post(path, body, content_type="application/json", **headers)
        failed = b'"error"' in response.content or b'"isError": true' in response.content
        if response.status_code != 200 or failed:
            raise SystemExit(f"a measured call failed: {response.content[:300]!r}")
        return response

    def get(path: str) -> Any:
        close_old_connections()
        return client.get(path)

    def mcp_call(i: int) -> Any:
        body = {"jsonrpc": "2.0", "id": i + 100, "method": "tools/call", "params": search_params}
        return post("/mcp", json.dumps(body), {**mcp, "HTTP_X_TOOLHUB_TASK": f"m-{run}-{i}"})

    return {
        "governed search_orders (REST invoke)": lambda i: post(
            "/api/v1/invoke", invoke_body(f"c-{run}-s{i}", "search_orders", SEARCH_ARGUMENTS), search),
        "governed search_orders (/mcp tools/call)": mcp_call,
        "bare DRF search": lambda i: get(BARE_SEARCH),
        "governed cancel_order (REST invoke)": lambda i: post(
            "/api/v1/invoke",
            invoke_body(f"c-{run}-w{i}", "cancel_order", cancel_arguments(governed_orders + 20 + i)), cancel),
        "bare DRF cancel": lambda i: post(
            "/demo/orders/cancel", bare_cancel_body(bare_orders + 20 + i), shop),
    }


if __name__ == "__main__":
    main()
