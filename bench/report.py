"""The figures of one run, the machine they were measured on, and how they are printed."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import django
import redis
from django.db import connection

from .config import (
    CONNECTIONS,
    ENV,
    LEDGER_LARGE,
    LEDGER_SMALL,
    MCP_OVER_REST_LIMIT,
    ROUNDS,
    SECONDS,
    THREADS,
    WARM_UP_SECONDS,
    WORKERS,
)
from .first_call import report_lines as first_call_lines
from .load import WRK_THREADS, Load, Timings
from .targets import FEDERATED_OVER_DIRECT, GOVERNED_OVER_BARE, verdict_lines

if TYPE_CHECKING:
    from .code_mode import InnerCallFigures, StartupFigures
    from .first_call import FirstCall
    from .mcp import McpFigures
    from .stdio import StdioFigures


@dataclass(frozen=True)
class AdminPage:
    """How long an admin page took (None: it did not answer a page), and why, when not timed."""

    name: str
    timings: Timings | None
    note: str = ""

    @property
    def summary(self) -> str:
        if self.timings is None:
            return self.note
        times = f"p50 {self.timings.p50_ms:>6.0f} ms  max {self.timings.max_ms:>6.0f} ms"
        return f"{times}  {self.note}" if self.note else times


@dataclass
class Report:
    """Every figure of the run, printed at the end."""

    load_average: dict[str, str]
    machine: list[str] = field(default_factory=list)
    loads: dict[str, Load] = field(default_factory=dict)
    batch_reads: Timings | None = None
    writes_in_order: list[tuple[str, float, float]] = field(default_factory=list)
    ledger: dict[int, dict[str, Load]] = field(default_factory=dict)
    ledger_rows: dict[int, int] = field(default_factory=dict)
    admin: list[AdminPage] = field(default_factory=list)
    profile: list[str] = field(default_factory=list)
    mcp: McpFigures | None = None
    stdio: StdioFigures | None = None
    code_mode: tuple[StartupFigures, InnerCallFigures] | None = None
    first_call: FirstCall | None = None
    flames: list[str] = field(default_factory=list)


def machine_facts() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version'), current_setting('shared_buffers'), "
                       "current_setting('synchronous_commit')")
        pg_version, shared_buffers, synchronous_commit = cursor.fetchone()
    redis_info = redis.Redis.from_url(ENV["CACHE_URL"]).info("server")
    with open("/proc/meminfo") as meminfo:
        memory_kb = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal"))
    with open("/proc/cpuinfo") as cpuinfo:
        cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line), "?")
    return [
        f"{os.cpu_count()} CPUs ({cpu}), {memory_kb / 1024 / 1024:.1f} GiB memory, {platform.platform()}",
        f"Python {platform.python_version()}, Django {django.get_version()}, PostgreSQL {pg_version} "
        f"(shared_buffers {shared_buffers}, synchronous_commit {synchronous_commit}), "
        f"Redis {redis_info['redis_version']}",
        f"gunicorn -w {WORKERS} --threads {THREADS} (gthread taking turns to accept, gunicorn.conf.py); "
        f"wrk -t{WRK_THREADS} -c{CONNECTIONS}, {SECONDS} s per load in "
        f"{ROUNDS} turns taken with the loads it is compared with, after {WARM_UP_SECONDS} s of "
        "warm-up; all on this machine over loopback",
    ]


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def print_report(report: Report, *, only: str | None) -> None:
    """Every figure of `report`; `only` names the one part run ("profile", "mcp", "stdio", "code",
    "first-call")."""
    title = {
        "profile": "ToolHub profile: make profile",
        "mcp": "ToolHub benchmark: the MCP part of make bench",
        "stdio": "ToolHub benchmark: the stdio part of make bench",
        "code": "ToolHub benchmark: the code mode part of make bench",
        "first-call": "ToolHub benchmark: a fresh worker's first call, part of make bench",
    }.get(only or "", "ToolHub benchmark: one run of make bench")
    out: list[str] = ["", "=" * 100, title, "=" * 100]
    out += [f"machine: {line}" for line in report.machine]
    out.append(f"load average (1, 5, 15 min): {report.load_average['start']} at start, "
               f"{report.load_average['end']} at end")
    if only is None:
        out += _loads(report) + _batches(report) + _ledger(report)
    if report.mcp is not None:
        out += _mcp(report.mcp)
    if report.first_call is not None:
        out += ["", *first_call_lines(report.first_call)]
    if report.stdio is not None:
        out += report.stdio.lines()
    if report.code_mode is not None:
        for figures in report.code_mode:
            out += figures.lines()
    if only in (None, "profile"):
        out += ["", "Where the time of one invoke goes (ms per call; SQL = statements, tx = transactions, "
                "ping = connection health checks, cache = Redis round trips; counts per call):", ""]
        out += report.profile
        out += report.flames
    if only in (None, "mcp", "first-call"):
        out += verdict_lines(report)
    print("\n".join(out))


def _mcp(figures: McpFigures) -> list[str]:
    out = ["", f"{'MCP endpoint':<50}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}   CPU ms per request: app + db"]
    names = {
        "mcp_direct": "shipping server's own /mcp (no ToolHub)",
        "mcp_federated": "ToolHub /mcp → shipping server (app incl. it)",
        "rest_own": "ToolHub REST invoke, search_orders",
        "mcp_own": "ToolHub /mcp tools/call, search_orders",
    }
    for key, name in names.items():
        load = figures.loads[key]
        out.append(f"{name:<50}{load.rps:>9.0f}{load.p50_ms:>9.2f}{load.p99_ms:>9.2f}   "
                   f"{load.app_cpu_ms:.2f} + {load.db_cpu_ms:.2f} = {load.cpu_ms:.2f}")
    over = figures.mcp_over_rest
    flag = "" if over <= MCP_OVER_REST_LIMIT else "   FLAG: the MCP layer drifted to costing more than REST"
    return out + [
        "",
        f"{'':<36}{'req/s':>6}{'CPU':>7}",
        _ratio_line("federated MCP: via ToolHub/direct", figures.federated_rps_ratio,
                    figures.federated_cpu_ratio, FEDERATED_OVER_DIRECT),
        f"ToolHub /mcp over REST invoke, CPU per request: {over:+.0%}   "
        f"target <= {MCP_OVER_REST_LIMIT:+.0%}  {_verdict(over <= MCP_OVER_REST_LIMIT)}{flag}",
    ]


def _loads(report: Report) -> list[str]:
    loads = report.loads
    out = ["", f"{'endpoint':<50}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}   CPU ms per request: app + db"]
    names = {
        "bare_search": "bare DRF search (no governance)",
        "governed_search": "governed search_orders (readonly)",
        "bare_cancel": "bare DRF cancel (same write, no governance)",
        "governed_cancel": "governed cancel_order (write: intent + commit)",
        "replay": "replay of a committed cancel_order key",
        "bare_imported": "bare view calling the refunds endpoint",
        "governed_imported": "governed list_order_refunds (imported GET)",
        "mcp_imported": "ToolHub /mcp tools/call, list_order_refunds",
    }
    for key, name in names.items():
        load = loads[key]
        out.append(f"{name:<50}{load.rps:>9.0f}{load.p50_ms:>9.2f}{load.p99_ms:>9.2f}   "
                   f"{load.app_cpu_ms:.2f} + {load.db_cpu_ms:.2f} = {load.cpu_ms:.2f}")
    read_ratio = loads["governed_search"].rps / loads["bare_search"].rps
    write_ratio = loads["governed_cancel"].rps / loads["bare_cancel"].rps
    replay_ratio = loads["replay"].rps / loads["governed_search"].rps
    imported_ratio = loads["governed_imported"].rps / loads["bare_imported"].rps
    # The same ratios from CPU per request: what the machine's other load moves least.
    cpu_ratios = (
        loads["bare_search"].cpu_ms / loads["governed_search"].cpu_ms,
        loads["bare_cancel"].cpu_ms / loads["governed_cancel"].cpu_ms,
        loads["governed_search"].cpu_ms / loads["replay"].cpu_ms,
        loads["bare_imported"].cpu_ms / loads["governed_imported"].cpu_ms,
    )
    return out + [
        "",
        f"{'':<36}{'req/s':>6}{'CPU':>7}",
        _ratio_line("readonly: governed/bare", read_ratio, cpu_ratios[0], 0.5),
        _ratio_line("write: governed/bare", write_ratio, cpu_ratios[1], 0.35),
        _ratio_line("replay / first readonly call", replay_ratio, cpu_ratios[2], 1.0)
        + f"   (p50 {loads['replay'].p50_ms:.2f} ms vs {loads['governed_search'].p50_ms:.2f} ms)",
        _ratio_line("imported GET: governed/bare", imported_ratio, cpu_ratios[3], GOVERNED_OVER_BARE),
    ]


def _ratio_line(name: str, ratio: float, cpu_ratio: float, target: float) -> str:
    """The verdict is on requests/s, as the targets are; CPU per request is the cross-check."""
    figures = f"{name:<36}{ratio:6.2f}{cpu_ratio:7.2f}"
    return f"{figures}   target >= {target:.2f}  {_verdict(ratio >= target)}"


def _batches(report: Report) -> list[str]:
    reads, writes = report.batch_reads, report.writes_in_order
    assert reads is not None
    in_order = all(writes[i][2] <= writes[i + 1][1] for i in range(len(writes) - 1))
    return [
        "",
        f"batch of 10 readonly calls of 200 ms each, 5 requests: p50 {reads.p50_ms:.0f} ms, max "
        f"{reads.max_ms:.0f} ms   target <= 300  {_verdict(reads.max_ms <= 300)}",
        "batch of 10 writes (cancel_order), from the ledger's events, ms after the first intent "
        "(call: intent-committed):",
        "  " + "  ".join(f"{call[5:]}: {intent:.0f}-{done:.0f}" for call, intent, done in writes),
        f"  each write committed before the next one's intent: {_verdict(in_order)}",
    ]


def _ledger(report: Report) -> list[str]:
    small, large = report.ledger[LEDGER_SMALL], report.ledger[LEDGER_LARGE]
    rows_small, rows_large = report.ledger_rows[LEDGER_SMALL], report.ledger_rows[LEDGER_LARGE]
    out = ["", f"{'ledger rows':<50}{rows_small:>15,}{rows_large:>15,}{'change':>10}"]
    for key, name in (("write_c1", "governed cancel_order, 1 connection"),
                      ("write", f"governed cancel_order, {CONNECTIONS} connections"),
                      ("search_c1", "control: search_orders, 1 connection")):
        for figure, unit in (("p50_ms", "p50 ms"), ("cpu_ms", "CPU ms/req")):
            before, after = getattr(small[key], figure), getattr(large[key], figure)
            out.append(f"{name + ', ' + unit:<50}{before:>15.2f}{after:>15.2f}{after / before - 1:>+10.0%}")
    write_change = large["write_c1"].p50_ms / small["write_c1"].p50_ms - 1
    control_change = large["search_c1"].p50_ms / small["search_c1"].p50_ms - 1
    # The control touches no ledger: when it moved by 10 % too, the machine did, not the ledger.
    verdict = (f"inconclusive: the control moved {control_change:+.0%}" if abs(control_change) > 0.10
               else _verdict(write_change <= 0.10))
    out += [
        f"write p50 at {rows_large:,} rows at most 10 % above {rows_small:,} rows (1 connection): {verdict}",
        "",
        f"ledger admin pages at {rows_large:,} rows, 5 loads each (target < 500 ms):",
    ]
    for page in report.admin:
        verdict = "" if page.timings is None else _verdict(page.timings.max_ms < 500)
        out.append(f"  {page.name:<46} {page.summary}  {verdict}")
    return out
