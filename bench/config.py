"""The knobs of `make bench` (environment variables) and what every part of it shares.

Imports nothing of Django: it is read before Django is set up.
"""

from __future__ import annotations

import os

SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))
WARM_UP_SECONDS = int(os.environ.get("BENCH_WARM_UP_SECONDS", "3"))
# Loads compared with each other take turns, this many each (over_http.take_turns).
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "8"))
# gunicorn runs with the production configuration (gunicorn.conf.py: gthread workers), 2
# workers per core so that one waiting on the database or an executor does not idle a core.
WORKERS = int(os.environ.get("BENCH_WORKERS", str(2 * (os.cpu_count() or 1))))
THREADS = int(os.environ.get("BENCH_THREADS", "4"))  # gunicorn.conf.py's default
LEDGER_SMALL = 10_000
LEDGER_LARGE = int(os.environ.get("BENCH_LEDGER_ROWS", "1000000"))
PROFILE_CALLS = int(os.environ.get("BENCH_PROFILE_CALLS", "200"))
# make profile: seconds of each load recorded by py-spy (bench/flame_loads.py).
FLAME_SECONDS = int(os.environ.get("BENCH_FLAME_SECONDS", "8"))
# An admin page slower than this on its first load is not loaded five times more.
SLOW_PAGE_S = 5
PORT = int(os.environ.get("BENCH_PORT", "8765"))
# ToolHub's /mcp tools/call may cost at most this much more CPU per request than REST invoke.
MCP_OVER_REST_LIMIT = 0.10
# The demo shipping MCP server (apps/demo_shop/shipping), federated through ToolHub's /mcp.
MCP_PORT = int(os.environ.get("BENCH_MCP_PORT", str(PORT + 1)))
# The MCP bridge that runs stdio MCP servers for the bench's ToolHub (bench/stdio.py).
BRIDGE_PORT = int(os.environ.get("BENCH_BRIDGE_PORT", str(PORT + 2)))
# The trivial upstream of the imported GET pair (bench/static_upstream.py).
STATIC_UPSTREAM_PORT = int(os.environ.get("BENCH_STATIC_UPSTREAM_PORT", str(PORT + 3)))
STATIC_UPSTREAM_URL = f"http://127.0.0.1:{STATIC_UPSTREAM_PORT}"
DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/toolhub_bench")
ENV = {
    **os.environ,
    "DJANGO_SETTINGS_MODULE": "bench.settings",
    "DATABASE_URL": DATABASE_URL,
    "CACHE_URL": os.environ.get("BENCH_CACHE_URL", "redis://127.0.0.1:6379/9"),
    "CELERY_BROKER_URL": os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/10"),
    "TOOLHUB_DEMO_PAYMENTS_URL": f"http://127.0.0.1:{PORT}/demo/payments",
    "TOOLHUB_DEMO_SHIPPING_MCP_URL": f"http://127.0.0.1:{MCP_PORT}/mcp",
    "TOOLHUB_EGRESS_ALLOW": f"127.0.0.1:{PORT},127.0.0.1:{MCP_PORT},127.0.0.1:{STATIC_UPSTREAM_PORT}",
    "TOOLHUB_MCP_BRIDGE_URL": f"http://127.0.0.1:{BRIDGE_PORT}",
    "TOOLHUB_DEFAULT_RATE_LIMIT_PER_MINUTE": "100000000",
    "LOG_LEVEL": "WARNING",
    "BENCH_STATIC_UPSTREAM_URL": STATIC_UPSTREAM_URL,
}

BARE_SEARCH = (
    "/demo/orders/search?user_id=u-1001&status=paid&start_date=2026-01-01&end_date=2026-03-31&limit=20"
)
SEARCH_ARGUMENTS = '{"status": "paid", "start_date": "2026-01-01", "end_date": "2026-03-31", "limit": 20}'
# Orders to cancel come in slots of 100,000 (bench/seed.py), one per load: 1-4 the write
# comparison (warm-up, then measured), 5/8 and 6/9 the two ledger sizes; slot 7 is shared
# out among single calls at these offsets.
SPARE_SLOT = 7
REPLAYED_ORDER = 0
PROFILE_REPLAYED_ORDER = 1
BATCH_ORDERS = 10
PROFILE_ORDERS = 1_000
PROFILE_BARE_ORDERS = 20_000


def say(message: str) -> None:
    print(message, flush=True)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())
