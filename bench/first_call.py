"""The first federated call of a fresh gunicorn worker, against a warm one.

    python -m bench.run --first-call     only this (make bench runs it after the MCP loads)

A gunicorn of one worker (gunicorn.conf.py, as in production) is started, and as soon as it
answers /healthz the first REST invoke of track_shipment (a tool of the demo shipping MCP
server, through the `mcp` executor) is timed by the client, then WARM_CALLS more, one after
another. FIRST_CALL_ROUNDS fresh servers, one after another, after one whose figures are left
out: on a fresh bench database its first call is the agent's first ever (no worker can know
that agent calls), not what a worker restarted under traffic pays. Each call has a task of its
own. `measure_first_call` takes a seeded database and a running shipping server (bench/mcp.py).
"""

from __future__ import annotations

import json
import os
import statistics
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx

from .config import ENV, PORT
from .load import gunicorn

FIRST_CALL_PORT = int(os.environ.get("BENCH_FIRST_CALL_PORT", str(PORT + 4)))
FIRST_CALL_ROUNDS = int(os.environ.get("BENCH_FIRST_CALL_ROUNDS", "5"))
WARM_CALLS = 20
TRACK_ARGUMENTS = json.dumps({"shipment_id": "SHP-000042"})

if TYPE_CHECKING:
    from .calls import Access


@dataclass(frozen=True)
class FirstCall:
    first_ms: tuple[float, ...]  # one per fresh worker
    warm_ms: tuple[float, ...]  # every warm call of every worker

    @property
    def first_p50_ms(self) -> float:
        return statistics.median(self.first_ms)

    @property
    def warm_p50_ms(self) -> float:
        return statistics.median(self.warm_ms)

    @property
    def ratio(self) -> float:
        return self.first_p50_ms / self.warm_p50_ms


def _timed_call(http: httpx.Client, access: Access) -> float:
    from .calls import invoke_body  # reads Django's settings at import

    body = invoke_body(f"first-{uuid.uuid4().hex[:12]}", "track_shipment", TRACK_ARGUMENTS)
    started = time.perf_counter()
    answer = http.post("/api/v1/invoke", content=body, headers=access.search)
    took_ms = (time.perf_counter() - started) * 1000
    if answer.status_code != 200 or answer.json().get("status") != "ok":
        raise SystemExit(f"track_shipment answered {answer.status_code}: {answer.text[:300]}")
    return took_ms


def measure_first_call(access: Access, *, rounds: int = FIRST_CALL_ROUNDS) -> FirstCall:
    first: list[float] = []
    warm: list[float] = []
    for _ in range(rounds + 1):
        with gunicorn(port=FIRST_CALL_PORT, workers=1, threads=4, env=ENV) as server, \
                httpx.Client(base_url=server.base_url, timeout=30) as http:
            first.append(_timed_call(http, access))
            warm += [_timed_call(http, access) for _ in range(WARM_CALLS)]
    return FirstCall(first_ms=tuple(first[1:]), warm_ms=tuple(warm[WARM_CALLS:]))


def report_lines(figures: FirstCall) -> list[str]:
    firsts = ", ".join(f"{ms:.1f}" for ms in figures.first_ms)
    return [
        f"first federated call (REST invoke of track_shipment) of a fresh gunicorn worker, "
        f"{len(figures.first_ms)} workers",
        f"  first call      p50 {figures.first_p50_ms:7.1f} ms   ({firsts})",
        f"  warm call       p50 {figures.warm_p50_ms:7.1f} ms   ({len(figures.warm_ms)} calls)",
        f"  first / warm        {figures.ratio:7.1f}x",
    ]
