"""The soak's load: callers, each one agent making mixed calls (search, get, sync and async
refunds, replays) for the demo's users, and the tally of what they saw."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    http: Counter = field(default_factory=Counter)
    outcomes: Counter = field(default_factory=Counter)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    transport_errors: Counter = field(default_factory=Counter)
    replay_mismatches: list[str] = field(default_factory=list)
    internal_errors: list[dict[str, Any]] = field(default_factory=list)

    def add(self, action: str, status: int, envelope: dict[str, Any], seconds: float) -> None:
        with self.lock:
            self.http[status] += 1
            self.outcomes[(action, envelope.get("status"), envelope.get("kind", ""))] += 1
            self.latencies.setdefault(action, []).append(seconds)
            if envelope.get("kind") == "internal" or status >= 500 and status != 503:
                self.internal_errors.append(envelope)


class Caller(threading.Thread):
    """One agent: mixed calls for the demo's users, every call its own task and call id."""

    ACTIONS = [("search", 40), ("get_order", 15), ("refund", 25), ("refund_async", 15), ("replay", 5)]

    def __init__(
        self, number: int, base: str, keys: dict[str, Any], tally: Tally, stop: threading.Event
    ) -> None:
        super().__init__(name=f"caller-{number}")
        self.number, self.base, self.keys, self.tally, self.stop = number, base, keys, tally, stop
        self.random = random.Random(number)
        self.refunded: list[tuple[dict[str, Any], str, dict[str, Any]]] = []
        self.count = 0

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.keys['agent_key']}"}
        with httpx.Client(base_url=self.base, headers=headers, timeout=30) as http:
            while not self.stop.is_set():
                action = self.random.choices([a for a, _ in self.ACTIONS], [w for _, w in self.ACTIONS])[0]
                self.call(http, action)

    def call(self, http: httpx.Client, action: str) -> None:
        self.count += 1
        if action == "replay" and not self.refunded:
            action = "refund"
        user = self.random.choice(list(self.keys["sessions"]))
        orders = self.keys["orders"][user]
        body: dict[str, Any] = {"task_id": f"soak-{self.number}-{self.count}"}
        first: dict[str, Any] = {}
        if action == "search":
            month = self.random.randint(1, 5)
            arguments: Any = {
                "status": "all",
                "start_date": f"2026-0{month}-01",
                "end_date": f"2026-0{month}-28",
                "limit": 20,
            }
            body["call"] = {"id": "c", "name": "search_orders", "arguments": arguments}
        elif action == "get_order":
            body["call"] = {
                "id": "c",
                "name": "get_order",
                "arguments": {"order_id": self.random.choice(orders)},
            }
        elif action == "replay":  # the same task and call id again: the stored result, no new refund
            body, user, first = self.random.choice(self.refunded)
        else:
            arguments = {"order_id": self.random.choice(orders), "amount_cents": 1}
            body["call"] = {"id": "c", "name": "refund_payment", "arguments": arguments}
            if action == "refund_async":
                body["wait_s"] = 0.5  # less than the tool's timeout: a worker runs it
        session = self.keys["sessions"][user]
        started = time.monotonic()
        try:
            response = http.post("/api/v1/invoke", json=body, headers={"X-ToolHub-Session": session})
            envelope = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            with self.tally.lock:
                self.tally.transport_errors[type(exc).__name__] += 1
            return
        self.tally.add(action, response.status_code, envelope, time.monotonic() - started)
        if action == "refund" and envelope.get("status") == "ok" and len(self.refunded) < 200:
            self.refunded.append((body, user, envelope))
        if action == "replay":
            self.check_replay(body, first, envelope)

    def check_replay(self, body: dict[str, Any], first: dict[str, Any], again: dict[str, Any]) -> None:
        same = (
            again.get("status") == "ok"
            and again.get("cached") is True
            and (again["data"]["refund_id"] == first["data"]["refund_id"])
        )
        if not same:
            with self.tally.lock:
                self.tally.replay_mismatches.append(
                    f"{body['task_id']}: {again.get('status')} {again.get('kind')}"
                )
