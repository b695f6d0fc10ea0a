"""`make bench`: the cost of governance, as ratios and figures measured in one run.

    python -m bench.run              everything below (make bench)
    python -m bench.run --profile    only where the time goes, in-process and under load (make profile)
    python -m bench.run --mcp        only the MCP loads (6 below)
    python -m bench.run --stdio      only the stdio MCP server (7 below)
    python -m bench.run --code       only code mode (8 below)
    python -m bench.run --first-call only a fresh worker's first call (9 below)

Recreates its own database (BENCH_DATABASE_URL, whose name must contain "bench"), seeds
the demo and the bench-only tools, starts gunicorn on PostgreSQL and Redis with
`bench.settings`, and loads it with wrk from this machine (loopback):

1. readonly: governed invoke of search_orders vs the shop's bare DRF search (same query);
   a replay of a committed write's key vs that first readonly call;
2. write: governed cancel_order (ledger intent + commit) vs the shop's bare DRF cancel
   (the same write);
   imported GET: governed list_order_refunds (imported from the payments provider's
   OpenAPI document) vs the bench's bare view making the same outbound call;
3. batch: 10 readonly calls of 200 ms each in one request; 10 writes, in order;
4. ledger size: the governed write's p50 at 10 k ledger rows and at BENCH_LEDGER_ROWS
   (default 1 M; 10 M takes ~10 more minutes), with the readonly search as a control; the
   ledger's admin pages at that size;
5. where the time of one invoke goes, in-process (bench/stage_profile.py); with --profile only,
   also py-spy recordings of gunicorn under each load of the targets (bench/flame_loads.py);
6. MCP (bench/mcp.py): ToolHub's /mcp calling a tool of the demo shipping MCP server vs that
   server called directly; ToolHub's own /mcp tools/call vs REST invoke of the same tool;
7. stdio (bench/stdio.py): mcp-server-time called through the SDK's stdio client directly vs
   through ToolHub (REST invoke → the MCP bridge → the same server under bubblewrap);
8. code mode (bench/code_mode.py): a run's start-up from the warm pool vs a cold sandbox; a
   governed search_orders made by a run's code vs the same call made directly, in-process;
9. a fresh worker's first call (bench/first_call.py): the first federated call of a new
   one-worker gunicorn against its warm calls, 5 workers one after another.

Every run that makes their loads ends with the table of performance targets (bench/targets.py).

Knobs: bench/config.py. Method and figures: docs/performance.md.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext

from .config import (
    ENV,
    LEDGER_LARGE,
    LEDGER_SMALL,
    PORT,
    STATIC_UPSTREAM_PORT,
    THREADS,
    WORKERS,
    load_average,
)
from .database import seeded_bench
from .load import gunicorn


def main() -> None:
    only = next(
        (flag[2:] for flag in ("--profile", "--mcp", "--stdio", "--code", "--first-call")
         if flag in sys.argv[1:]), None
    )
    if LEDGER_LARGE <= LEDGER_SMALL:
        raise SystemExit(f"BENCH_LEDGER_ROWS must be more than {LEDGER_SMALL:,}.")
    started_at = load_average()
    access = seeded_bench(bench_tools=only in (None, "profile"))
    # Everything below reads Django's settings and models at import.
    from .code_mode import measure_code_mode, measure_inner_calls
    from .first_call import measure_first_call
    from .flame_loads import flame_loads
    from .in_process import profile
    from .mcp import measure_mcp, shipping_server
    from .over_http import measure_over_http
    from .report import Report, machine_facts, print_report
    from .static_refunds import static_refunds_upstream
    from .stdio import mcp_bridge, measure_stdio, seed_stdio

    report = Report(load_average={"start": started_at}, machine=machine_facts())
    if only != "code":
        # The imported GET pair's upstream, only for the loads over HTTP that call it.
        upstream = (static_refunds_upstream(port=STATIC_UPSTREAM_PORT) if only in (None, "profile")
                    else nullcontext())
        with upstream, gunicorn(port=PORT, workers=WORKERS, threads=THREADS, env=ENV) as server, \
                shipping_server() as shipping_pid, mcp_bridge():
            if only is None:
                measure_over_http(report, server, access)
            if only in (None, "mcp"):
                report.mcp = measure_mcp(server, access, shipping_pid)
            if only in (None, "first-call"):
                report.first_call = measure_first_call(access)
            if only in (None, "stdio"):
                seed_stdio()
                report.stdio = measure_stdio(server, access)
            if only == "profile":
                report.flames = flame_loads(server, access)
    if only in (None, "code"):
        report.code_mode = (measure_code_mode(), measure_inner_calls())
    if only in (None, "profile"):
        report.profile = profile(access)
    report.load_average["end"] = load_average()
    print_report(report, only=only)


if __name__ == "__main__":
    main()
