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

Run as `python -m soak.run` from the repository's root. The callers are load.py; the
settling, the audit of the ledger and the report are checks.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from soak.checks import audit, report, settle
from soak.load import Caller, Tally

ROOT = Path(__file__).resolve().parent.parent

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
        callers = [Caller(n, BASE, keys, tally, stop) for n in range(CALLERS)]
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
        report(tally, CALLERS, elapsed, events, figures, problems)
        return 1 if problems else 0
    finally:
        processes.stop_all()


if __name__ == "__main__":
    sys.exit(main())
