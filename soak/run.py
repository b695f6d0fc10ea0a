"""`make soak`: the whole system under load and faults for a bounded time, then an audit.

Runs gunicorn (gunicorn.conf.py), two Celery workers and beat on PostgreSQL and Redis, and
drives the demo with a mix of readonly, sync write, async write and replayed calls while
faults are injected: the payments upstream answering past the tool's timeout, failing
after recording the refund, failing before recording it, and one Celery worker killed
with SIGKILL. Then it lets beat's sweeper and reconciler finish and checks the ledger
against the upstream's own records. Exit status 1 on any inconsistency or internal error.

Environment: SOAK_SECONDS (60), SOAK_CALLERS (6), SOAK_SETTLE_SECONDS (240), SOAK_PORT
(8767), SOAK_DATABASE_URL (…/toolhub_soak, dropped and recreated), SOAK_CACHE_URL and
SOAK_BROKER_URL (Redis databases 11 and 12, flushed).
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DURATION_S = float(os.environ.get("SOAK_SECONDS", "60"))
CALLERS = int(os.environ.get("SOAK_CALLERS", "6"))
SETTLE_S = float(os.environ.get("SOAK_SETTLE_SECONDS", "240"))
PORT = int(os.environ.get("SOAK_PORT", "8767"))
BASE = f"http://127.0.0.1:{PORT}"
DATABASE_URL = os.environ.get("SOAK_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/toolhub_soak")
LOG_DIR = ROOT / "var" / "soak"
ENV = {
    **os.environ,
    "DJANGO_SETTINGS_MODULE": "toolhub.settings.base",
    "DATABASE_URL": DATABASE_URL,
    "CACHE_URL": os.environ.get("SOAK_CACHE_URL", "redis://127.0.0.1:6379/11"),
    "CELERY_BROKER_URL": os.environ.get("SOAK_BROKER_URL", "redis://127.0.0.1:6379/12"),
    "TOOLHUB_DEMO_PAYMENTS_URL": f"{BASE}/demo/payments",
    # The payments upstream is this server, on loopback: the egress policy must allow it.
    "TOOLHUB_EGRESS_ALLOW": f"127.0.0.1:{PORT}",
    "TOOLHUB_DEFAULT_RATE_LIMIT_PER_MINUTE": "100000000",
    # Reconcile soon and often, so the audit can follow within the settle time.
    "TOOLHUB_RECONCILE_BACKOFF_S": "1,2,4,8,16",
    "TOOLHUB_SWEEP_GRACE_S": "2",
    "GUNICORN_BIND": f"127.0.0.1:{PORT}",
    "WEB_CONCURRENCY": os.environ.get("SOAK_WEB_WORKERS", "3"),
    "LOG_LEVEL": "INFO",
}
ENV.pop("PROMETHEUS_MULTIPROC_DIR", None)
# This process uses Django too (to inject faults and audit the ledger), quietly.
os.environ.update({**ENV, "LOG_LEVEL": "WARNING"})

# Fault phases, as fractions of the run: the refund tool's upstream path while each lasts.
FAULTS = [
    (0.15, "/refunds?delay_ms=4000", "upstream slower than the 3 s timeout"),
    (0.30, "/refunds?fail=after", "upstream records the refund, then answers 500"),
    (0.45, "/refunds?fail=before", "upstream answers 503 without recording"),
    (0.60, "/refunds", "upstream healthy again"),
]
KILL_WORKER_AT = 0.5


def log(message: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- setup -----------------------------------------------------------------------------


def fresh_database() -> None:
    import psycopg

    parts = urlsplit(DATABASE_URL)
    name = parts.path.lstrip("/")
    admin_url = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def fresh_redis() -> None:
    import redis

    for url in (ENV["CACHE_URL"], ENV["CELERY_BROKER_URL"]):
        redis.Redis.from_url(url).flushdb()


def manage(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300
    )
    if result.returncode:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return result.stdout


class Processes:
    """The processes of the system, each in a session of its own, logging under var/soak/."""

    def __init__(self) -> None:
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, command: list[str]) -> None:
        log_file = open(LOG_DIR / f"{name}.log", "a")  # noqa: SIM115 - owned by the child
        self.running[name] = subprocess.Popen(
            command, cwd=ROOT, env=ENV, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )

    def start_worker(self, name: str) -> None:
        self.start(
            name,
            [
                str(Path(sys.executable).with_name("celery")),
                "-A",
                "toolhub",
                "worker",
                "--concurrency",
                "2",
                "--hostname",
                f"{name}@%h",
                "--loglevel",
                "INFO",
            ],
        )

    def kill(self, name: str) -> None:
        os.killpg(self.running[name].pid, signal.SIGKILL)
        self.running[name].wait(timeout=10)

    def died(self) -> list[str]:
        return [name for name, process in self.running.items() if process.poll() is not None]

    def stop_all(self) -> None:
        for process in self.running.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in self.running.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def wait_ready(processes: Processes) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if processes.died():
            raise SystemExit(f"{processes.died()} exited at start; see {LOG_DIR}")
        workers_ready = all("ready." in (LOG_DIR / f"{w}.log").read_text() for w in ("worker1", "worker2"))
        try:
            web_ready = httpx.get(f"{BASE}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            web_ready = False
        if workers_ready and web_ready:
            return
        time.sleep(0.5)
    raise SystemExit(f"the system did not become ready within 60 s; see {LOG_DIR}")


# --- load ------------------------------------------------------------------------------


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

    def __init__(self, number: int, keys: dict[str, Any], tally: Tally, stop: threading.Event) -> None:
        super().__init__(name=f"caller-{number}")
        self.number, self.keys, self.tally, self.stop = number, keys, tally, stop
        self.random = random.Random(number)
        self.refunded: list[tuple[dict[str, Any], str, dict[str, Any]]] = []
        self.count = 0

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.keys['agent_key']}"}
        with httpx.Client(base_url=BASE, headers=headers, timeout=30) as http:
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


# --- faults ----------------------------------------------------------------------------


def republish_refund(path: str) -> None:
    from apps.catalog.models import ToolVersion
    from apps.catalog.selectors import tool_visible_by_name
    from apps.catalog.services import version_create_draft_from, version_publish, version_save_draft
    from apps.tenancy.models import Tenant

    # refund_payment is a shared tool (it names the platform's payments key), granted to demo.
    tool = tool_visible_by_name(tenant=Tenant.objects.get(slug="demo"), name="refund_payment")
    current = ToolVersion.objects.filter(tool=tool, status="published").order_by("-number")[0]
    draft = version_create_draft_from(version=current, actor="soak")
    draft.executor_config = {**draft.executor_config, "path": path}
    version_save_draft(version=draft, actor="soak")
    version_publish(version=draft, actor="soak")


def run_faults(processes: Processes, stop: threading.Event, started: float, events: list[str]) -> None:
    schedule = [(at * DURATION_S, "path", path, why) for at, path, why in FAULTS]
    schedule.append((KILL_WORKER_AT * DURATION_S, "kill", "worker1", "SIGKILL to worker1 and its children"))
    for at, what, target, why in sorted(schedule):
        if stop.wait(max(0.0, started + at - time.monotonic())):
            return
        if what == "path":
            republish_refund(target)
        else:
            processes.kill(target)
            processes.start_worker(target)  # two workers again, as a supervisor would
        events.append(f"{time.monotonic() - started:5.1f} s  {why}")
        log(why)


# --- audit -----------------------------------------------------------------------------


def settle(deadline: float) -> int:
    """Wait for beat's sweeper and reconciler to settle what is uncertain; the count left."""
    from apps.ledger.models import LedgerEntry

    while True:
        open_entries = LedgerEntry.objects.filter(
            state__in=["intent", "unknown"], triage_since__isnull=True
        ).count()
        if not open_entries or time.monotonic() > deadline:
            return open_entries
        time.sleep(2)


def audit() -> tuple[list[str], dict[str, Any]]:
    """Every DemoRefund has a committed ledger row with its key; nothing refunded twice or
    without a row; nothing left in intent; unknown only in the triage queue."""
    from django.db.models import Count

    from apps.demo_shop.models import DemoRefund
    from apps.ledger.models import LedgerEntry

    refunds = dict(
        DemoRefund.objects.values_list("idempotency_key")
        .annotate(n=Count("pk"))
        .values_list("idempotency_key", "n")
    )
    ledger = {
        key: (state, triage_since is not None)
        for key, state, triage_since in LedgerEntry.objects.filter(tool__name="refund_payment").values_list(
            "key", "state", "triage_since"
        )
    }
    problems = []
    problems += [f"refunded {n} times: {key}" for key, n in refunds.items() if n > 1]
    for key in refunds:
        state, in_triage = ledger.get(key, ("missing", False))
        if state != "committed" and not (state == "unknown" and in_triage):
            problems.append(f"refund without a committed ledger row ({state}): {key}")
    for key, (state, in_triage) in ledger.items():
        if state == "committed" and key not in refunds:
            problems.append(f"committed in the ledger, never refunded: {key}")
        if state == "failed" and key in refunds:
            problems.append(f"failed in the ledger, yet refunded: {key}")
        if state == "intent":
            problems.append(f"left in intent: {key}")
        if state == "unknown" and not in_triage:
            problems.append(f"unknown and not in triage: {key}")
    all_states = Counter(LedgerEntry.objects.values_list("state", flat=True))
    figures = {
        "refunds": len(refunds),
        "ledger": dict(all_states),
        "in triage": sum(1 for _, in_triage in ledger.values() if in_triage),
        "stuck outside refund_payment": LedgerEntry.objects.exclude(tool__name="refund_payment")
        .filter(state="intent")
        .count(),
    }
    if figures["stuck outside refund_payment"]:
        problems.append(f"{figures['stuck outside refund_payment']} other entries left in intent")
    return problems, figures


def report(
    tally: Tally, elapsed: float, events: list[str], figures: dict[str, Any], problems: list[str]
) -> None:
    total = sum(tally.http.values())
    print("\n=================== soak report ===================")
    print(f"load        {elapsed:.0f} s, {CALLERS} callers, {total} requests ({total / elapsed:.1f}/s)")
    print("faults      " + "\n            ".join(events))
    print("http        " + ", ".join(f"{status}: {n}" for status, n in sorted(tally.http.items())))
    print("outcomes")
    for (action, status, kind), n in sorted(tally.outcomes.items(), key=lambda item: (item[0][0], -item[1])):
        print(f"            {action:<13} {status:<17} {kind or '':<16} {n}")
    print(
        "latency     "
        + "\n            ".join(
            f"{action:<13} p50 {statistics.median(values) * 1000:7.1f} ms   "
            f"p99 {sorted(values)[int(len(values) * 0.99)] * 1000:7.1f} ms"
            for action, values in sorted(tally.latencies.items())
        )
    )
    if tally.transport_errors:
        print(f"transport   {dict(tally.transport_errors)}")
    print(
        f"replays     {sum(n for (a, _, _), n in tally.outcomes.items() if a == 'replay')} "
        f"({len(tally.replay_mismatches)} not answering the first result)"
    )
    print(
        f"ledger      {figures['ledger']}; refunds at the upstream: {figures['refunds']}; "
        f"in triage: {figures['in triage']}"
    )
    print("consistency " + ("PERFECT" if not problems else f"{len(problems)} PROBLEMS"))
    for problem in problems[:50]:
        print(f"            - {problem}")
    print("===================================================")


def main() -> int:
    # A SIGTERM (a supervisor, a time limit) must stop the servers and workers it started too:
    # as SystemExit, it runs main's `finally` where the default handler would just die.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    for old in LOG_DIR.glob("*.log"):
        old.unlink()
    log(f"fresh database and Redis; logs in {LOG_DIR}")
    fresh_database()
    fresh_redis()
    manage("migrate", "--noinput", "-v", "0")
    seed = manage("seed_demo")
    agent_key = next(line.split("=", 1)[1] for line in seed.splitlines() if line.startswith("AGENT_KEY="))

    import django

    django.setup()
    from apps.demo_shop.models import DemoOrder

    processes = Processes()
    try:
        processes.start("web", [str(Path(sys.executable).with_name("gunicorn")), "toolhub.wsgi:application"])
        processes.start_worker("worker1")
        processes.start_worker("worker2")
        processes.start(
            "beat",
            [
                str(Path(sys.executable).with_name("celery")),
                "-A",
                "toolhub",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(LOG_DIR / "beat-schedule"),
            ],
        )
        wait_ready(processes)
        sessions = {}
        for user in ("u-1001", "u-2002", "u-3003"):
            response = httpx.post(
                f"{BASE}/api/v1/sessions",
                json={"subject": user, "ttl_s": 3600},
                headers={"Authorization": f"Bearer {agent_key}"},
            )
            response.raise_for_status()
            sessions[user] = response.json()["token"]
        orders = {
            user: list(
                DemoOrder.objects.filter(user_id=user, status="paid").values_list("order_id", flat=True)
            )
            for user in sessions
        }
        keys = {"agent_key": agent_key, "sessions": sessions, "orders": orders}

        log(f"load for {DURATION_S:.0f} s with {CALLERS} callers")
        tally, stop, events = Tally(), threading.Event(), []
        callers = [Caller(n, keys, tally, stop) for n in range(CALLERS)]
        started = time.monotonic()
        faults = threading.Thread(target=run_faults, args=(processes, stop, started, events))
        for thread in [*callers, faults]:
            thread.start()
        stop.wait(DURATION_S)
        stop.set()
        for thread in [*callers, faults]:
            thread.join(timeout=60)
        elapsed = time.monotonic() - started
        if processes.died():
            log(f"processes that died on their own: {processes.died()}")

        log(f"load over; waiting up to {SETTLE_S:.0f} s for the sweeper and the reconciler")
        settle_started = time.monotonic()
        left = settle(settle_started + SETTLE_S)
        # A reconciliation task lost with the killed worker is enqueued again when its
        # 120 s lease runs out (apps/gateway/tasks.py): settling can take that long.
        log(f"{left} entries still open after {time.monotonic() - settle_started:.0f} s")
        problems, figures = audit()
        problems += [f"a replay answered differently: {m}" for m in tally.replay_mismatches]
        problems += [f"internal error: {e.get('message', e)}" for e in tally.internal_errors[:20]]
        problems += [f"transport errors: {dict(tally.transport_errors)}"] if tally.transport_errors else []
        report(tally, elapsed, events, figures, problems)
        return 1 if problems else 0
    finally:
        processes.stop_all()


if __name__ == "__main__":
    sys.exit(main())
