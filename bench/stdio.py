"""The stdio part of `make bench` (`python -m bench.run --stdio`: only this).

`mcp-server-time`'s `get_current_time`, called one call after another (the cost of one call
is the point, not throughput under load):

- direct: the official SDK's stdio client spawning the server itself, no sandbox, no ToolHub;
- through ToolHub: REST invoke of the imported, published tool → the pipeline → the `mcp`
  executor → the MCP bridge (`manage.py mcp_bridge`) → the same server under bubblewrap.

The two take turns (STDIO_ROUNDS of STDIO_CALLS each) after a warm-up that starts both
servers, so neither pays a process start in what is measured. Each ToolHub call has a task
of its own, so loop detection never sees a repeat.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from django.core.management import call_command
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .calls import Access, invoke_body
from .config import BRIDGE_PORT, ENV, say
from .load import ROOT, Server, wait_until_healthy

CALLS = int(os.environ.get("BENCH_STDIO_CALLS", "200"))
ROUNDS = int(os.environ.get("BENCH_STDIO_ROUNDS", "3"))
WARM_UP_CALLS = 20
SERVER = [f"{sys.prefix}/bin/mcp-server-time", "--local-timezone", "UTC"]
TOOL = "get_current_time"
ARGUMENTS = '{"timezone": "UTC"}'
BRIDGE_LOG = ROOT / "var" / "bench-bridge.log"


@dataclass(frozen=True)
class Series:
    """The durations of calls made one after another, in ms."""

    durations_ms: list[float]

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.durations_ms)

    @property
    def p95_ms(self) -> float:
        return statistics.quantiles(self.durations_ms, n=20)[-1]

    @property
    def calls_per_s(self) -> float:
        return 1000 * len(self.durations_ms) / sum(self.durations_ms)


@dataclass(frozen=True)
class StdioFigures:
    direct: Series
    through: Series

    @property
    def p50_ratio(self) -> float:
        return self.through.p50_ms / self.direct.p50_ms

    def lines(self) -> list[str]:
        out = ["", f"stdio MCP server, {TOOL} of mcp-server-time, {len(self.direct.durations_ms)} sequential "
               f"calls each in {ROUNDS} turns", f"{'':<60}{'calls/s':>9}{'p50 ms':>9}{'p95 ms':>9}"]
        for name, series in (
            ("direct: the SDK's stdio client, no sandbox", self.direct),
            ("through ToolHub: REST invoke → bridge → bubblewrap", self.through),
        ):
            out.append(f"{name:<60}{series.calls_per_s:>9.0f}{series.p50_ms:>9.2f}{series.p95_ms:>9.2f}")
        added = self.through.p50_ms - self.direct.p50_ms
        return out + [f"through ToolHub / direct, p50: {self.p50_ratio:.1f}x ({added:+.2f} ms per call)"]


@contextmanager
def mcp_bridge() -> Iterator[None]:
    """`manage.py mcp_bridge` on BRIDGE_PORT, with the bench's settings, until the block ends."""
    with open(BRIDGE_LOG, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "mcp_bridge", "--port", str(BRIDGE_PORT)],
            cwd=ROOT, env=ENV, start_new_session=True, stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        wait_until_healthy(f"http://127.0.0.1:{BRIDGE_PORT}", process, what="the MCP bridge", log=BRIDGE_LOG,
                           seconds=20)
        yield
    finally:
        process.terminate()
        process.wait(timeout=30)


def seed_stdio() -> None:
    """The operator's and the curator's steps of README "Servers that speak stdio", for the
    demo tenant: a launcher, an upstream, its tools imported, published and granted."""
    quiet = {"stdout": open(os.devnull, "w"), "stderr": open(os.devnull, "w")}
    call_command("add_mcp_launcher", "bench-time", "--command", " ".join(SERVER), **quiet)
    call_command("add_upstream", "bench-clock", "--tenant", "demo", "--kind", "mcp",
                 "--command", "bench-time", **quiet)
    call_command("import_mcp", "--tenant", "demo", "--upstream", "bench-clock", "--tools", TOOL,
                 "--publish", "--grant", "support-bot", **quiet)


async def _direct(rounds: list[int]) -> list[list[float]]:
    """Each round's durations of `get_current_time` over one stdio session, in ms."""
    parameters = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
    results = []
    with open(os.devnull, "w") as errlog:
        async with stdio_client(parameters, errlog=errlog) as (read, write), ClientSession(
            read, write, read_timeout_seconds=30
        ) as session:
            await session.initialize()
            for calls in rounds:
                durations = []
                for _ in range(calls):
                    started = time.perf_counter()
                    answer = await session.call_tool(TOOL, {"timezone": "UTC"})
                    durations.append((time.perf_counter() - started) * 1000)
                    if answer.is_error:
                        raise SystemExit(f"{TOOL} answered an error directly: {answer.content}")
                results.append(durations)
    return results


def _through(http: httpx.Client, access: Access, calls: int, turn: str) -> list[float]:
    durations = []
    for number in range(calls):
        body = invoke_body(f"bench-stdio-{turn}-{number}", TOOL, ARGUMENTS)
        started = time.perf_counter()
        answer = http.post("/api/v1/invoke", content=body, headers=access.search)
        durations.append((time.perf_counter() - started) * 1000)
        if answer.status_code != 200 or answer.json().get("status") != "ok":
            raise SystemExit(f"{TOOL} through ToolHub answered {answer.status_code}: {answer.text[:400]}")
    return durations


def measure_stdio(server: Server, access: Access) -> StdioFigures:
    say(f"stdio MCP server: {ROUNDS} turns of {CALLS} calls, direct and through ToolHub…")
    direct: list[float] = []
    through: list[float] = []
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        _through(http, access, WARM_UP_CALLS, "warm-up")
        for turn in range(ROUNDS):
            # A new server process per turn, warmed up before it is measured, as the bridge's
            # process was by the warm-up above.
            direct += asyncio.run(_direct([WARM_UP_CALLS, CALLS]))[1]
            through += _through(http, access, CALLS, str(turn))
    return StdioFigures(direct=Series(direct), through=Series(through))
