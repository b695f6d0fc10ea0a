"""The measurements made over HTTP against gunicorn: loads with wrk, batches, ledger sizes, admin."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime

import httpx

from apps.ledger.models import LedgerEntry, LedgerEvent

from .calls import (
    BARE_IMPORTED,
    IMPORTED_CALL,
    IMPORTED_PARAMS,
    MCP_HEADERS,
    TOOLHUB_OK,
    Access,
    cancel_arguments,
    invoke_body,
    mcp_session,
)
from .config import (
    BARE_SEARCH,
    BATCH_ORDERS,
    CONNECTIONS,
    LEDGER_LARGE,
    LEDGER_SMALL,
    REPLAYED_ORDER,
    ROUNDS,
    SECONDS,
    SLOW_PAGE_S,
    SPARE_SLOT,
    WARM_UP_SECONDS,
    load_average,
    say,
)
from .cpu import CpuMeter, database_backends, process_group, spent
from .ledger_fill import fill_target, ledger_empty, ledger_fill, ledger_rows, ledger_vacuum_analyze
from .load import WRK_THREADS, Load, Server, Timings, admin_client, stopwatch, wrk
from .report import AdminPage, Report
from .seed import BENCH_USER, ORDER_SLOT_SIZE, order_slot


@dataclass(frozen=True)
class Target:
    """One kind of load: what wrk sends, and for cancels the slot of orders it may use."""

    key: str
    name: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    kind: str | None = None
    slot: int | None = None
    body: str | None = None
    connections: int = CONNECTIONS
    expect: str | None = None  # kind mcp: what every answer must contain
    base_url: str | None = None  # another server than ToolHub's


def take_turns(
    server: Server, targets: list[Target], *, seconds: int, rounds: int,
    upstream_pids: Callable[[], list[int]] = list,
) -> dict[str, Load]:
    """Run the targets one after another, `rounds` times, for seconds / rounds each, so that
    a change in the machine's load meanwhile weighs on all of them alike; with the CPU the
    server (and `upstream_pids`, counted as the app's) and the database spent on each."""
    meter = CpuMeter(app_pids=lambda: process_group(server.process_group) + upstream_pids(),
                     db_pids=database_backends)
    turns: dict[str, list[Load]] = {t.key: [] for t in targets}
    # A target's slot is shared out among its rounds and wrk threads: no order twice.
    per_thread = ORDER_SLOT_SIZE // (rounds * WRK_THREADS)
    for round_number in range(rounds):
        for target in targets:
            script_args: list[str] = []
            if target.slot is not None:
                first = order_slot(target.slot) + round_number * WRK_THREADS * per_thread
                script_args = [str(first), str(per_thread)]
            elif target.body is not None:
                script_args = [target.body, *([target.expect] if target.expect else [])]
            app_before, db_before = meter.sample()
            load = wrk(
                target.base_url or server.base_url, target.path, headers=target.headers,
                seconds=max(seconds // rounds, 1),
                connections=target.connections, kind=target.kind, script_args=script_args,
            )
            app_after, db_after = meter.sample()
            turns[target.key].append(
                replace(load, app_cpu_s=spent(app_before, app_after), db_cpu_s=spent(db_before, db_after))
            )
    loads = {key: Load.of_turns(runs) for key, runs in turns.items()}
    for target in targets:
        load = loads[target.key]
        say(f"  {target.name:<48} {load.rps:>7.0f} req/s  p50 {load.p50_ms:>7.2f} ms  "
            f"p99 {load.p99_ms:>7.2f} ms  CPU/req {load.app_cpu_ms:.2f} + {load.db_cpu_ms:.2f} ms")
    return loads


def measure_over_http(report: Report, server: Server, access: Access) -> None:
    spare = order_slot(SPARE_SLOT)
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        replayed = invoke_body(f"replay-{uuid.uuid4().hex[:8]}", "cancel_order",
                               cancel_arguments(spare + REPLAYED_ORDER))
        first = http.post("/api/v1/invoke", content=replayed, headers=access.cancel).json()
        if first.get("status") != "ok":
            raise SystemExit(f"the call to replay failed: {first}")
        reads = [
            Target("bare_search", "bare DRF search", BARE_SEARCH),
            Target("governed_search", "governed search_orders (first call of a task)", "/api/v1/invoke",
                   access.search, kind="search"),
            Target("replay", "replay of a committed cancel_order key", "/api/v1/invoke", access.cancel,
                   kind="replay", body=replayed),
        ]
        writes = [
            Target("bare_cancel", "bare DRF cancel", "/demo/orders/cancel", access.shop, kind="bare_cancel",
                   slot=3),
            Target("governed_cancel", "governed cancel_order (intent + commit)", "/api/v1/invoke",
                   access.cancel, kind="cancel", slot=4),
        ]
        imported = [
            Target("bare_imported", "bare view calling the refunds endpoint", BARE_IMPORTED),
            Target("governed_imported", "governed list_order_refunds (imported GET)", "/api/v1/invoke",
                   access.search, kind="call", body=IMPORTED_CALL),
            Target("mcp_imported", "ToolHub /mcp tools/call: list_order_refunds", "/mcp",
                   {**MCP_HEADERS, **access.search,
                    "Mcp-Session-Id": mcp_session(f"{server.base_url}/mcp", access.search)},
                   kind="mcp", body=IMPORTED_PARAMS, expect=TOOLHUB_OK),
        ]
        _same_answer(http, access)
        say(f"Warm-up (load average {load_average()}):")
        take_turns(server, [*reads, replace(writes[0], slot=1), replace(writes[1], slot=2), *imported],
                   seconds=WARM_UP_SECONDS, rounds=1)
        say(f"Load runs, {ROUNDS} turns each (load average {load_average()}):")
        report.loads = {
            **take_turns(server, reads, seconds=SECONDS, rounds=ROUNDS),
            **take_turns(server, writes, seconds=SECONDS, rounds=ROUNDS),
            **take_turns(server, imported, seconds=SECONDS, rounds=ROUNDS),
        }
        report.batch_reads = batch_of_reads(http, access)
        report.writes_in_order = batch_of_writes(http, access, first_order=spare + BATCH_ORDERS)

    for rows, slots in ((LEDGER_SMALL, (5, 8)), (LEDGER_LARGE, (6, 9))):
        report.ledger_rows[rows] = ledger_at(rows)
        say(f"  at {report.ledger_rows[rows]:,} ledger rows (load average {load_average()}):")
        report.ledger[rows] = take_turns(server, [
            Target("write_c1", "governed cancel_order, 1 connection", "/api/v1/invoke", access.cancel,
                   kind="cancel", slot=slots[1], connections=1),
            Target("write", f"governed cancel_order, {CONNECTIONS} connections", "/api/v1/invoke",
                   access.cancel, kind="cancel", slot=slots[0]),
            Target("search_c1", "control: governed search_orders, 1 connection", "/api/v1/invoke",
                   access.search, kind="search", connections=1),
        ], seconds=SECONDS, rounds=ROUNDS)
    report.admin = admin_pages(server.base_url, access)


def _same_answer(http: httpx.Client, access: Access) -> None:
    """The imported tool and its baseline must list the same refunds, or the pair compares
    two different things."""
    governed = http.post("/api/v1/invoke", content=f'{{"task_id": "same-answer", "call": {IMPORTED_CALL}}}',
                         headers=access.search).json()
    bare = http.get(BARE_IMPORTED)
    if governed.get("status") != "ok" or bare.status_code != 200 or governed.get("data") != bare.json():
        raise SystemExit(
            f"the imported tool and its baseline answer differently: {governed} vs {bare.text[:300]}"
        )


def _batch(
    http: httpx.Client, headers: dict[str, str], calls: list[tuple[str, str]], task_id: str
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


def batch_of_reads(http: httpx.Client, access: Access) -> Timings:
    """Ten bench_wait calls of 200 ms in one request, five times (after one warm-up)."""
    calls = [("bench_wait", f'{{"ms": 200, "label": "read {i}"}}') for i in range(10)]
    _batch(http, access.search, calls, f"reads-{uuid.uuid4().hex[:8]}")
    return stopwatch(lambda _: _batch(http, access.search, calls, f"reads-{uuid.uuid4().hex[:8]}"), times=5)


def batch_of_writes(
    http: httpx.Client, access: Access, *, first_order: int
) -> list[tuple[str, float, float]]:
    """Ten cancel_order calls in one request; when each intent and outcome was recorded,
    in ms after the first intent, read back from the ledger's events."""
    task_id = f"writes-{uuid.uuid4().hex[:8]}"
    calls = [("cancel_order", cancel_arguments(first_order + i)) for i in range(10)]
    _batch(http, access.cancel, calls, task_id)
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


def ledger_at(rows: int) -> int:
    """Bring the ledger to `rows` (the small size: from empty), vacuumed and analyzed; its size."""
    if rows == LEDGER_SMALL:
        say(f"Emptying the ledger, then filling it to {rows:,} rows…")
        ledger_empty()
    else:
        say(f"Filling the ledger to {rows:,} rows…")
    target = fill_target(tenant_slug="demo", agent_name="support-bot", tool_name="cancel_order",
                         subject=BENCH_USER)
    ledger_fill(rows=rows, target=target, progress=say)
    started = time.monotonic()
    ledger_vacuum_analyze()
    say(f"  VACUUM ANALYZE, CHECKPOINT: {time.monotonic() - started:.0f} s")
    return ledger_rows()


def admin_pages(base_url: str, access: Access) -> list[AdminPage]:
    """The ledger's admin pages at the ledger's current size: five loads each after a first
    one; a page whose first load takes over SLOW_PAGE_S is loaded once. A page this branch
    does not have (404), or that fails, is reported as such."""
    entry_id, task_id = LedgerEntry.objects.order_by().values_list("pk", "task_id")[0]
    pages = [
        ("ledger list", "/admin/ledger/ledgerentry/"),
        ("ledger list, state = unknown", "/admin/ledger/ledgerentry/?state__exact=unknown"),
        ("ledger search by task id", f"/admin/ledger/ledgerentry/?q={task_id}"),
        ("ledger entry with its timeline", f"/admin/ledger/ledgerentry/{entry_id}/change/"),
        ("triage queue", "/admin/ledger/triageentry/"),
    ]
    say(f"Admin pages (load average {load_average()}):")
    timed: list[AdminPage] = []
    admin = admin_client(base_url, username=access.admin_username, password=access.admin_password)
    try:
        for name, path in pages:
            page = _admin_page(admin, name, path)
            timed.append(page)
            say(f"  {name:<44} {page.summary}")
    finally:
        admin.close()
    return timed


def _admin_page(admin: httpx.Client, name: str, path: str) -> AdminPage:
    started = time.perf_counter()
    try:
        response = admin.get(path)
    except httpx.HTTPError as exc:
        # gunicorn kills a sync worker after its timeout (30 s): the connection just ends.
        elapsed = time.perf_counter() - started
        return AdminPage(name, None, f"no answer after {elapsed:.0f} s ({type(exc).__name__})")
    first = Timings(((time.perf_counter() - started) * 1000,))
    if response.status_code == 404:
        return AdminPage(name, None, "not on this branch")
    if response.status_code != 200:
        # e.g. 500 when gunicorn's worker timeout (30 s) interrupted the page (bench-gunicorn.log).
        return AdminPage(name, None, f"answered {response.status_code} after {first.max_ms / 1000:.0f} s")
    if first.max_ms > SLOW_PAGE_S * 1000:
        return AdminPage(name, first, "loaded once: too slow to repeat")
    return AdminPage(name, stopwatch(lambda _: admin.get(path), times=5))
