"""`make bench`: the cost of governance, as ratios and figures measured in one run.

    python -m bench.run              everything below (make bench)
    python -m bench.run --profile    only where the time of one invoke goes (make profile)

Recreates its own database (BENCH_DATABASE_URL, whose name must contain "bench"), seeds
the demo and the bench-only tools, starts gunicorn on PostgreSQL and Redis with
`bench.settings`, and loads it with wrk from this machine (loopback):

1. readonly: governed invoke of search_orders vs the shop's bare DRF search (same query);
2. write: governed cancel_order (ledger intent + commit) vs the shop's bare DRF cancel
   (same write); a replay of a committed key vs a first readonly call;
3. batch: 10 readonly calls of 200 ms each in one request; 10 writes, in order;
4. ledger size: the governed write's p50 at 10 k ledger rows and at BENCH_LEDGER_ROWS
   (default 1 M; 10 M takes ~10 more minutes), with the readonly search as a control; the
   ledger's admin pages at that size;
5. where the time of one invoke goes, in-process (bench/stage_profile.py).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg

from .load import Load, Timings, admin_client, gunicorn, stopwatch, wrk

SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))
WARM_UP_SECONDS = int(os.environ.get("BENCH_WARM_UP_SECONDS", "3"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "8"))
# gunicorn sync workers: 2 per core, so one waiting on the database or an executor does not idle a core.
WORKERS = int(os.environ.get("BENCH_WORKERS", str(2 * (os.cpu_count() or 1))))
LEDGER_SMALL = 10_000
LEDGER_LARGE = int(os.environ.get("BENCH_LEDGER_ROWS", "1000000"))
PROFILE_CALLS = int(os.environ.get("BENCH_PROFILE_CALLS", "200"))
PORT = int(os.environ.get("BENCH_PORT", "8765"))
DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/toolhub_bench")
ENV = {
    **os.environ,
    "DJANGO_SETTINGS_MODULE": "bench.settings",
    "DATABASE_URL": DATABASE_URL,
    "CACHE_URL": os.environ.get("BENCH_CACHE_URL", "redis://127.0.0.1:6379/9"),
    "CELERY_BROKER_URL": os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/10"),
    "TOOLHUB_DEMO_PAYMENTS_URL": f"http://127.0.0.1:{PORT}/demo/payments",
    "TOOLHUB_DEFAULT_RATE_LIMIT_PER_MINUTE": "100000000",
    "LOG_LEVEL": "WARNING",
}
BARE_SEARCH = (
    "/demo/orders/search?user_id=u-1001&status=paid&start_date=2026-01-01&end_date=2026-03-31&limit=20"
)
SEARCH_ARGUMENTS = '{"status": "paid", "start_date": "2026-01-01", "end_date": "2026-03-31", "limit": 20}'
# Orders to cancel come in slots of 100,000 (bench/seed.py), one per load run: 1-4 the write
# comparison, 5/8 and 6/9 the two ledger sizes; slot 7 is shared out among single calls.
SPARE_SLOT = 7
REPLAYED_ORDER, BATCH_ORDERS, PROFILE_ORDERS, PROFILE_BARE_ORDERS = 0, 10, 1_000, 20_000


def _say(message: str) -> None:
    print(message, flush=True)


def _load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@dataclass
class Report:
    """Every figure of the run, printed at the end."""

    machine: list[str] = field(default_factory=list)
    loads: dict[str, Load] = field(default_factory=dict)
    batch_reads: Timings | None = None
    writes_in_order: list[tuple[str, float, float]] = field(default_factory=list)
    ledger: dict[int, dict[str, Load]] = field(default_factory=dict)
    ledger_rows: dict[int, int] = field(default_factory=dict)
    admin: list[tuple[str, Timings | None]] = field(default_factory=list)
    profile: list[str] = field(default_factory=list)
    load_average: dict[str, str] = field(default_factory=dict)


def main() -> None:
    profile_only = "--profile" in sys.argv[1:]
    if LEDGER_LARGE <= LEDGER_SMALL:
        raise SystemExit(f"BENCH_LEDGER_ROWS must be more than {LEDGER_SMALL:,}.")
    report = Report(load_average={"start": _load_average()})
    _fresh_database()
    os.environ.update(ENV)
    import django

    django.setup()
    seed = _seed()
    report.machine = _machine()
    if not profile_only:
        with gunicorn(port=PORT, workers=WORKERS, env=ENV) as base_url:
            _measure_over_http(report, base_url, seed)
    report.profile = _profile(seed)
    report.load_average["end"] = _load_average()
    _print(report, profile_only=profile_only)


# --- set-up ------------------------------------------------------------------------------


def _fresh_database() -> None:
    """Drop and recreate the bench database: every run starts from the same empty ledger."""
    name = urlsplit(DATABASE_URL).path.lstrip("/")
    if "bench" not in name:
        raise SystemExit(f"BENCH_DATABASE_URL names {name!r}: the bench drops its database, so its "
                         "name must contain 'bench'.")
    server = urlsplit(DATABASE_URL)._replace(path="/postgres").geturl()
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


@dataclass(frozen=True)
class Seed:
    agent_key: str
    admin_username: str
    admin_password: str
    headers_search: dict[str, str]  # agent key and a session of u-1001 (the demo's orders)
    headers_cancel: dict[str, str]  # agent key and a session of the bench user (orders to cancel)


def _seed() -> Seed:
    from django.core.cache import cache
    from django.core.management import call_command

    from apps.demo_shop.services import demo_seed
    from apps.tenancy.models import Agent
    from apps.tenancy.services import session_mint
    from bench.seed import BENCH_USER, bench_seed

    _say("Migrating and seeding a fresh bench database…")
    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    cache.clear()  # the bench's own cache database: counters and memos of an earlier run
    demo = demo_seed()
    bench_seed()
    agent = Agent.objects.get(tenant__slug="demo", name="support-bot")

    def headers(subject: str) -> dict[str, str]:
        token, _ = session_mint(
            tenant_id=agent.tenant_id, agent_id=agent.pk, subject=subject, attributes={}, ttl_s=86_400
        )
        return {"Authorization": f"Bearer {demo.agent_key}", "Content-Type": "application/json",
                "X-ToolHub-Session": token}

    return Seed(
        agent_key=demo.agent_key, admin_username=demo.admin_username, admin_password=demo.admin_password,
        headers_search=headers("u-1001"), headers_cancel=headers(BENCH_USER),
    )


def _machine() -> list[str]:
    import django
    import redis
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version'), current_setting('shared_buffers'), "
                       "current_setting('synchronous_commit')")
        pg_version, shared_buffers, synchronous_commit = cursor.fetchone()
    redis_info = redis.Redis.from_url(ENV["CACHE_URL"]).info("server")
    memory_kb = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line), "?")
    return [
        f"{os.cpu_count()} CPUs ({cpu}), {memory_kb / 1024 / 1024:.1f} GiB memory, {platform.platform()}",
        f"Python {platform.python_version()}, Django {django.get_version()}, PostgreSQL {pg_version} "
        f"(shared_buffers {shared_buffers}, synchronous_commit {synchronous_commit}), "
        f"Redis {redis_info['redis_version']}",
        f"gunicorn -w {WORKERS} (sync), wrk -t2 -c{CONNECTIONS} -d{SECONDS}s after {WARM_UP_SECONDS} s "
        "of warm-up, all on this machine over loopback",
    ]


# --- over HTTP ---------------------------------------------------------------------------


def _measure_over_http(report: Report, base_url: str, seed: Seed) -> None:
    from bench.seed import order_slot

    def run(name: str, path: str, *, headers: dict[str, str] | None = None, kind: str | None = None,
            argument: str | None = None, connections: int = CONNECTIONS, seconds: int = SECONDS) -> Load:
        load = wrk(base_url, path, headers=headers or {}, seconds=seconds, connections=connections,
                   kind=kind, argument=argument)
        _say(f"  {name:<44} {load.rps:>7.0f} req/s  p50 {load.p50_ms:>7.2f} ms  p99 {load.p99_ms:>7.2f} ms")
        return load

    _say(f"Load runs (load average {_load_average()}):")
    run("warm-up: bare search", BARE_SEARCH, seconds=WARM_UP_SECONDS)
    run("warm-up: governed search", "/api/v1/invoke", headers=seed.headers_search, kind="search",
        seconds=WARM_UP_SECONDS)
    report.loads["bare_search"] = run("bare DRF search", BARE_SEARCH)
    report.loads["governed_search"] = run(
        "governed search_orders (first call of a task)", "/api/v1/invoke", headers=seed.headers_search,
        kind="search",
    )
    shop_key = {**_shop_key(), "Content-Type": "application/json"}
    run("warm-up: bare cancel", "/demo/orders/cancel", headers=shop_key, kind="bare_cancel",
        argument=str(order_slot(1)), seconds=WARM_UP_SECONDS)
    run("warm-up: governed cancel", "/api/v1/invoke", headers=seed.headers_cancel, kind="cancel",
        argument=str(order_slot(2)), seconds=WARM_UP_SECONDS)
    report.loads["bare_cancel"] = run(
        "bare DRF cancel", "/demo/orders/cancel", headers=shop_key, kind="bare_cancel",
        argument=str(order_slot(3)),
    )
    report.loads["governed_cancel"] = run(
        "governed cancel_order (intent + commit)", "/api/v1/invoke", headers=seed.headers_cancel,
        kind="cancel", argument=str(order_slot(4)),
    )
    spare = order_slot(SPARE_SLOT)
    with httpx.Client(base_url=base_url, timeout=60) as http:
        replay_body = _invoke_body(
            f"replay-{uuid.uuid4().hex[:8]}", "c1", "cancel_order", _cancel_args(spare + REPLAYED_ORDER)
        )
        first = http.post("/api/v1/invoke", content=replay_body, headers=seed.headers_cancel).json()
        if first.get("status") != "ok":
            raise SystemExit(f"the call to replay failed: {first}")
        report.loads["replay"] = run(
            "replay of a committed cancel_order key", "/api/v1/invoke", headers=seed.headers_cancel,
            kind="replay", argument=replay_body,
        )
        report.batch_reads = _batch_of_reads(http, seed)
        report.writes_in_order = _batch_of_writes(http, seed, first_order=spare + BATCH_ORDERS)

    for rows, slots in ((LEDGER_SMALL, (5, 8)), (LEDGER_LARGE, (6, 9))):
        _ledger_at(rows, report)
        _say(f"  at {report.ledger_rows[rows]:,} ledger rows (load average {_load_average()}):")
        report.ledger[rows] = {
            "write_c1": run("governed cancel_order, 1 connection", "/api/v1/invoke",
                            headers=seed.headers_cancel, kind="cancel", argument=str(order_slot(slots[1])),
                            connections=1),
            "write": run(f"governed cancel_order, {CONNECTIONS} connections", "/api/v1/invoke",
                         headers=seed.headers_cancel, kind="cancel", argument=str(order_slot(slots[0]))),
            "search_c1": run("control: governed search_orders, 1 connection", "/api/v1/invoke",
                             headers=seed.headers_search, kind="search", connections=1),
        }
    report.admin = _admin_pages(base_url, seed)


def _invoke_body(task_id: str, call_id: str, tool: str, arguments: str) -> str:
    return json.dumps({"task_id": task_id, "call": {"id": call_id, "name": tool, "arguments": arguments}})


def _cancel_args(order_number: int) -> str:
    from bench.seed import order_id

    return f'{{"order_id": "{order_id(order_number)}", "reason": "customer_request"}}'


def _shop_key() -> dict[str, str]:
    from django.conf import settings

    return {"Authorization": f"Bearer {settings.TOOLHUB_SECRETS['DEMO_PAYMENTS_API_KEY']}"}


def _batch(
    http: httpx.Client, headers: dict[str, str], task_id: str, calls: list[tuple[str, str]]
) -> httpx.Response:
    """One batch request; every call in it must answer ok."""
    body = {"task_id": task_id, "calls": [
        {"id": f"call_{i}", "name": name, "arguments": arguments} for i, (name, arguments) in enumerate(calls)
    ]}
    response = http.post("/api/v1/invoke/batch", json=body, headers=headers)
    bad = [r for r in response.json().get("results", []) if r["status"] != "ok"]
    if response.status_code != 200 or bad:
        raise SystemExit(f"a batch call failed: {bad or response.text[:300]}")
    return response


def _batch_of_reads(http: httpx.Client, seed: Seed) -> Timings:
    """Ten bench_wait calls of 200 ms in one request, five times (after one warm-up)."""
    calls = [("bench_wait", f'{{"ms": 200, "label": "read {i}"}}') for i in range(10)]
    _batch(http, seed.headers_search, f"reads-{uuid.uuid4().hex[:8]}", calls)
    return stopwatch(
        lambda _: _batch(http, seed.headers_search, f"reads-{uuid.uuid4().hex[:8]}", calls), times=5
    )


def _batch_of_writes(http: httpx.Client, seed: Seed, *, first_order: int) -> list[tuple[str, float, float]]:
    """Ten cancel_order calls in one request; when each intent and outcome was recorded,
    in ms after the first intent, read back from the ledger's events."""
    from apps.ledger.models import LedgerEvent

    task_id = f"writes-{uuid.uuid4().hex[:8]}"
    calls = [("cancel_order", _cancel_args(first_order + i)) for i in range(10)]
    _batch(http, seed.headers_cancel, task_id, calls)
    events = LedgerEvent.objects.filter(entry__task_id=task_id).values_list(
        "entry__call_id", "to_state", "at"
    )
    at: dict[tuple[str, str], datetime] = {(call_id, state): moment for call_id, state, moment in events}
    origin = at[("call_0", "intent")]
    return [
        (f"call_{i}", _ms_between(origin, at[(f"call_{i}", "intent")]),
         _ms_between(origin, at[(f"call_{i}", "committed")]))
        for i in range(10)
    ]


def _ms_between(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds() * 1000


def _ledger_at(rows: int, report: Report) -> None:
    from bench.ledger_fill import fill_target, ledger_empty, ledger_fill, ledger_rows, ledger_vacuum_analyze
    from bench.seed import BENCH_USER

    if rows == LEDGER_SMALL:
        _say("Emptying the ledger, then filling it to 10,000 rows…")
        ledger_empty()
    else:
        _say(f"Filling the ledger to {rows:,} rows…")
    target = fill_target(tenant_slug="demo", agent_name="support-bot", tool_name="cancel_order",
                         subject=BENCH_USER)
    ledger_fill(rows=rows, target=target, progress=_say)
    started = time.monotonic()
    ledger_vacuum_analyze()
    _say(f"  VACUUM ANALYZE: {time.monotonic() - started:.0f} s")
    report.ledger_rows[rows] = ledger_rows()


def _admin_pages(base_url: str, seed: Seed) -> list[tuple[str, Timings | None]]:
    """The ledger's admin pages at the ledger's current size: five loads each after one warm-up.
    A page this branch does not have (404) is reported as such."""
    from apps.ledger.models import LedgerEntry

    entry_id, task_id = LedgerEntry.objects.order_by().values_list("pk", "task_id")[0]
    pages = [
        ("ledger list", "/admin/ledger/ledgerentry/"),
        ("ledger list, state = unknown", "/admin/ledger/ledgerentry/?state__exact=unknown"),
        ("ledger search by task id", f"/admin/ledger/ledgerentry/?q={task_id}"),
        ("ledger entry with its timeline", f"/admin/ledger/ledgerentry/{entry_id}/change/"),
        ("triage queue", "/admin/ledger/triageentry/"),
    ]
    _say(f"Admin pages (load average {_load_average()}):")
    timed: list[tuple[str, Timings | None]] = []
    admin = admin_client(base_url, username=seed.admin_username, password=seed.admin_password)
    try:
        for name, path in pages:
            if admin.get(path).status_code == 404:
                timed.append((name, None))
                _say(f"  {name:<44} not on this branch")
                continue
            timings = stopwatch(lambda _, p=path: admin.get(p), times=5)
            timed.append((name, timings))
            _say(f"  {name:<44} p50 {timings.p50_ms:>7.0f} ms  max {timings.max_ms:>7.0f} ms")
    finally:
        admin.close()
    return timed


# --- in-process profile ------------------------------------------------------------------


def _profile(seed: Seed) -> list[str]:
    from django.db import close_old_connections
    from django.test import Client

    from bench.seed import BENCH_USER, order_id, order_slot
    from bench.stage_profile import Scenario, format_profile, profile_libraries, profile_stages

    def meta(headers: dict[str, str]) -> dict[str, str]:
        """Request headers as the test client takes them."""
        return {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()
                if name != "Content-Type"}

    search, cancel, shop = meta(seed.headers_search), meta(seed.headers_cancel), meta(_shop_key())
    run_id = uuid.uuid4().hex[:8]
    spare = order_slot(SPARE_SLOT)
    replayed = _invoke_body(
        f"p-{run_id}-replay", "c1", "cancel_order", _cancel_args(spare + REPLAYED_ORDER + 1)
    )

    def post(client: Client, path: str, body: str, headers: dict[str, str]) -> Any:
        close_old_connections()  # what the WSGI handler does at the start of every request
        response = client.post(path, body, content_type="application/json", **headers)
        if response.status_code != 200 or b'"error"' in response.content:
            raise SystemExit(f"a profiled call failed: {response.content[:300]!r}")
        return response

    def bare_search(client: Client, i: int) -> Any:
        close_old_connections()
        return client.get(BARE_SEARCH)

    scenarios = [
        Scenario("governed search_orders (readonly)", lambda c, i: post(
            c, "/api/v1/invoke", _invoke_body(f"p-{run_id}-s{i}", "c1", "search_orders", SEARCH_ARGUMENTS),
            search)),
        Scenario("governed cancel_order (write: intent + commit)", lambda c, i: post(
            c, "/api/v1/invoke",
            _invoke_body(f"p-{run_id}-{i}", "c1", "cancel_order", _cancel_args(spare + PROFILE_ORDERS + i)),
            cancel)),
        # The first (warm-up) call commits the key; every later one replays it.
        Scenario("replay of a committed cancel_order key", lambda c, i: post(
            c, "/api/v1/invoke", replayed, cancel)),
        Scenario("bare DRF cancel (baseline)", lambda c, i: post(
            c, "/demo/orders/cancel", json.dumps({
                "user_id": BENCH_USER, "order_id": order_id(spare + PROFILE_BARE_ORDERS + i),
                "reason": "customer_request"}), shop)),
        Scenario("bare DRF search (baseline)", bare_search),
    ]
    _say(f"Profiling in-process, {PROFILE_CALLS} calls per scenario…")
    lines: list[str] = []
    for profile in profile_stages(scenarios, calls=PROFILE_CALLS):
        lines += format_profile(profile)
        lines.append("")
    write = scenarios[1]
    # Numbered after the stage profile's calls, so every call cancels an order of its own.
    libraries = profile_libraries(write, calls=PROFILE_CALLS, start=PROFILE_CALLS + 100)
    total = sum(ms for _, ms in libraries)
    lines.append(f"{write.name} under cProfile: own time per call by library, request thread only "
                 f"({total:.2f} ms, cProfile's overhead included)")
    lines += [f"  {name:<38}{ms:>7.3f}{ms / total:>7.0%}" for name, ms in libraries[:12]]
    return lines


# --- the report --------------------------------------------------------------------------


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def _print(report: Report, *, profile_only: bool) -> None:
    out: list[str] = ["", "=" * 100, "ToolHub benchmark: one run of make bench" if not profile_only
                      else "ToolHub profile: make profile", "=" * 100]
    out += [f"machine: {line}" for line in report.machine]
    out.append(f"load average (1, 5, 15 min): {report.load_average['start']} at start, "
               f"{report.load_average['end']} at end")
    if not profile_only:
        out += _figures(report)
    out += ["", "Where the time of one invoke goes (ms per call; SQL = statements, tx = transactions, "
            "ping = connection health checks, cache = Redis round trips):", ""]
    out += report.profile
    print("\n".join(out))


def _figures(report: Report) -> list[str]:
    loads = report.loads
    out = ["", f"{'endpoint':<50}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}"]
    names = {
        "bare_search": "bare DRF search (no governance)",
        "governed_search": "governed search_orders (readonly)",
        "bare_cancel": "bare DRF cancel (same write, no governance)",
        "governed_cancel": "governed cancel_order (write: intent + commit)",
        "replay": "replay of a committed cancel_order key",
    }
    for key, name in names.items():
        load = loads[key]
        out.append(f"{name:<50}{load.rps:>9.0f}{load.p50_ms:>9.2f}{load.p99_ms:>9.2f}")
    read_ratio = loads["governed_search"].rps / loads["bare_search"].rps
    write_ratio = loads["governed_cancel"].rps / loads["bare_cancel"].rps
    replay_ratio = loads["replay"].rps / loads["governed_search"].rps
    out += [
        "",
        f"readonly: governed/bare req/s       {read_ratio:6.2f}   target >= 0.50  "
        f"{_verdict(read_ratio >= 0.5)}",
        f"write: governed/bare req/s          {write_ratio:6.2f}   target >= 0.35  "
        f"{_verdict(write_ratio >= 0.35)}",
        f"replay / first readonly call req/s  {replay_ratio:6.2f}   target >= 1.00  "
        f"{_verdict(replay_ratio >= 1)}   (p50 {loads['replay'].p50_ms:.2f} ms vs "
        f"{loads['governed_search'].p50_ms:.2f} ms)",
    ]
    reads = report.batch_reads
    assert reads is not None
    out += [
        "",
        f"batch of 10 readonly calls of 200 ms each, 5 requests: p50 {reads.p50_ms:.0f} ms, max "
        f"{reads.max_ms:.0f} ms   target <= 300  {_verdict(reads.max_ms <= 300)}",
        "batch of 10 writes (cancel_order), from the ledger's events, ms after the first intent:",
        "  " + "  ".join(
            f"{call[5:]}:{intent:.0f}-{done:.0f}" for call, intent, done in report.writes_in_order
        ),
    ]
    in_order = all(
        report.writes_in_order[i][2] <= report.writes_in_order[i + 1][1] for i in range(9)
    )
    out.append(f"  each write committed before the next one's intent: {_verdict(in_order)}")
    small, large = report.ledger[LEDGER_SMALL], report.ledger[LEDGER_LARGE]
    rows_small, rows_large = report.ledger_rows[LEDGER_SMALL], report.ledger_rows[LEDGER_LARGE]
    out += ["", f"{'ledger size':<50}{rows_small:>15,}{rows_large:>15,}{'change':>10}"]
    for key, name in (("write_c1", "governed cancel_order p50 ms, 1 connection"),
                      ("write", f"governed cancel_order p50 ms, {CONNECTIONS} connections"),
                      ("search_c1", "control: search_orders p50 ms, 1 connection")):
        change = large[key].p50_ms / small[key].p50_ms - 1
        out.append(f"{name:<50}{small[key].p50_ms:>15.2f}{large[key].p50_ms:>15.2f}{change:>+10.0%}")
    write_change = large["write_c1"].p50_ms / small["write_c1"].p50_ms - 1
    out.append(f"write p50 at {rows_large:,} rows within 10 % of {rows_small:,} rows (1 connection): "
               f"{_verdict(write_change <= 0.10)}")
    out += ["", f"ledger admin pages at {rows_large:,} rows, 5 loads each (target < 500 ms):"]
    for name, timings in report.admin:
        if timings is None:
            out.append(f"  {name:<46} not on this branch")
        else:
            out.append(f"  {name:<46} p50 {timings.p50_ms:>6.0f} ms  max {timings.max_ms:>6.0f} ms  "
                       f"{_verdict(timings.max_ms < 500)}")
    return out


if __name__ == "__main__":
    main()
