"""Counters the request layers of every app share: refusals of a request as a whole.

The scrape that exposes them (GET /metrics) is toolhub/metrics.py.
"""

from __future__ import annotations

from prometheus_client import Counter

REFUSALS = Counter(
    "toolhub_refusals",
    "Requests answered with an error as a whole, before or instead of any tool call (401 key, "
    "400 envelope, 413 body, 429 agent rate, 503 database or broker down, ...), by HTTP status "
    "and error kind. Tool calls' own outcomes are toolhub_invocations_total.",
    ["status", "kind"],
)


def refusal_observed(*, status: int, kind: str) -> None:
    REFUSALS.labels(status=str(status), kind=kind).inc()
