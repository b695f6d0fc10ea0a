"""CPU per call of the governed write against the shop's bare DRF cancel, in-process.

    python -m bench.write_cpu [calls]    after `make profile` has seeded the bench database

`make profile` reads wall time per stage, which a busy machine inflates (waiting on a
PostgreSQL that others load too). This reads CPU time over `calls` calls of each scenario,
taking turns in rounds: the process's (every thread: the request's, the executor's worker,
the invocation log's writer) and, when PostgreSQL runs on this machine, that of its server
processes for the bench database. The bench user's cancelled orders are put back to `paid`
first, so it can run again on the same database (it cancels orders of slot 1).
"""

from __future__ import annotations

import os
import sys
import time
import uuid

from .config import ENV
from .cpu import database_cpu_seconds


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    os.environ.update(ENV)
    import django

    django.setup()
    from django.db import connection
    from django.test import Client

    from apps.demo_shop.models import DemoOrder, OrderStatus
    from apps.demo_shop.seed import demo_seed

    from .calls import access_of, bare_cancel_body, cancel_arguments, invoke_body
    from .in_process import _meta, _post
    from .seed import BENCH_USER, order_slot

    first = order_slot(1)
    DemoOrder.objects.filter(user_id=BENCH_USER, status=OrderStatus.CANCELLED).update(
        status=OrderStatus.PAID, cancel_reason=""
    )
    access = access_of(demo_seed())
    cancel, shop = _meta(access.cancel), _meta(access.shop)
    run = uuid.uuid4().hex[:8]
    scenarios = {
        "governed cancel_order": lambda i: _post(
            client, "/api/v1/invoke",
            invoke_body(f"w-{run}-{i}", "cancel_order", cancel_arguments(first + i)), cancel),
        "bare DRF cancel": lambda i: _post(
            client, "/demo/orders/cancel", bare_cancel_body(first + 50_000 + i), shop),
    }
    client = Client()
    for scenario in scenarios.values():
        for i in range(20):
            scenario(i)
    rounds = 10
    per_round = calls // rounds
    cpu = dict.fromkeys(scenarios, 0.0)
    postgres = dict.fromkeys(scenarios, 0.0)
    wall = dict.fromkeys(scenarios, 0.0)
    for round_number in range(rounds):
        for name, scenario in scenarios.items():
            start_postgres = database_cpu_seconds()
            start_cpu, start_wall = time.process_time(), time.perf_counter()
            for i in range(20 + round_number * per_round, 20 + (round_number + 1) * per_round):
                scenario(i)
            cpu[name] += time.process_time() - start_cpu
            wall[name] += time.perf_counter() - start_wall
            postgres[name] += database_cpu_seconds() - start_postgres
    done = per_round * rounds
    for name in scenarios:
        app, db = cpu[name] / done * 1000, postgres[name] / done * 1000
        print(f"{name:<24} CPU ms per call: app {app:6.3f} + PostgreSQL {db:6.3f} = {app + db:6.3f}   "
              f"wall {wall[name] / done * 1000:6.3f}")
    governed, bare = (cpu[name] + postgres[name] for name in scenarios)
    print(f"bare / governed CPU: {bare / governed:.2f}")
    connection.close()


if __name__ == "__main__":
    main()
