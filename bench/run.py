"""`make bench`: the cost of governance, as ratios measured in one run.

Starts gunicorn on PostgreSQL and Redis, loads it with wrk from this machine (loopback),
and compares the governed readonly invoke of `search_orders` with a bare DRF endpoint
that runs the same query without governance. Prints requests/s, p50 and p99 and the ratio.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PORT = int(os.environ.get("BENCH_PORT", "8765"))
BASE = f"http://127.0.0.1:{PORT}"
DURATION_S = int(os.environ.get("BENCH_SECONDS", "10"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "8"))
# gunicorn sync workers: 2 per core, so one waiting on the database or an executor does not idle a core.
WORKERS = os.environ.get("BENCH_WORKERS", str(2 * (os.cpu_count() or 1)))
ENV = {
    **os.environ,
    "DJANGO_SETTINGS_MODULE": "toolhub.settings.base",
    "DATABASE_URL": os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/toolhub_bench"),
    "CACHE_URL": os.environ.get("BENCH_CACHE_URL", "redis://127.0.0.1:6379/9"),
    "CELERY_BROKER_URL": os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/10"),
    "TOOLHUB_DEMO_PAYMENTS_URL": f"{BASE}/demo/payments",
    "TOOLHUB_DEFAULT_RATE_LIMIT_PER_MINUTE": "100000000",
    "LOG_LEVEL": "WARNING",
}
BARE_PATH = (
    "/demo/orders/search?user_id=u-1001&status=paid&start_date=2026-01-01&end_date=2026-03-31&limit=20"
)


def manage(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=ENV, check=True, capture_output=True, text=True
    )
    return result.stdout


def create_database() -> None:
    name = ENV["DATABASE_URL"].rsplit("/", 1)[1]
    subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-qc", f"CREATE DATABASE {name}"], capture_output=True
    )


def mint_session(agent_key: str) -> str:
    response = httpx.post(
        f"{BASE}/api/v1/sessions",
        json={"subject": "u-1001", "ttl_s": 3600},
        headers={"Authorization": f"Bearer {agent_key}"},
    )
    response.raise_for_status()
    return response.json()["token"]


def wrk(path: str, headers: dict[str, str], script: str | None = None) -> dict[str, float]:
    command = ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{DURATION_S}s", "--latency"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    if script:
        command += ["-s", str(ROOT / "bench" / script)]
    output = subprocess.run([*command, BASE + path], capture_output=True, text=True, check=True).stdout
    if "unexpected answer" in output or "Non-2xx" in output:
        print(output)
        raise SystemExit("the benchmark saw error answers; the figures would be meaningless")
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
        "p50_ms": _ms(re.search(r"50%\s+([\d.]+\w+)", output).group(1)),
        "p99_ms": _ms(re.search(r"99%\s+([\d.]+\w+)", output).group(1)),
    }


def _ms(value: str) -> float:
    number, unit = re.match(r"([\d.]+)(\w+)", value).groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wait_until_up() -> None:
    for _ in range(100):
        try:
            if httpx.get(f"{BASE}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("gunicorn did not start")


def main() -> None:
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    create_database()
    manage("migrate", "-v0")
    agent_key = re.search(r"^AGENT_KEY=(\S+)$", manage("seed_demo"), re.M).group(1)
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("gunicorn")),
            "toolhub.wsgi",
            "-b",
            f"127.0.0.1:{PORT}",
            "-w",
            WORKERS,
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=ENV,
        start_new_session=True,
    )
    try:
        wait_until_up()
        auth = {"Authorization": f"Bearer {agent_key}", "Content-Type": "application/json"}
        governed_headers = {**auth, "X-ToolHub-Session": mint_session(agent_key)}
        for warm_up in (
            lambda: wrk(BARE_PATH, {}),
            lambda: wrk("/api/v1/invoke", governed_headers, "invoke.lua"),
        ):
            warm_up()
        bare = wrk(BARE_PATH, {})
        governed = wrk("/api/v1/invoke", governed_headers, "invoke.lua")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    print(
        f"\nToolHub benchmark: gunicorn -w {WORKERS}, wrk -t2 -c{CONNECTIONS} -d{DURATION_S}s, "
        "loopback, one run"
    )
    print(f"{'endpoint':<34}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}")
    for name, figures in (
        ("bare DRF search (no governance)", bare),
        ("governed invoke search_orders", governed),
    ):
        print(f"{name:<34}{figures['rps']:>10.0f}{figures['p50_ms']:>10.2f}{figures['p99_ms']:>10.2f}")
    print(f"\nratio governed/bare requests/s: {governed['rps'] / bare['rps']:.2f}  (target >= 0.50)")


if __name__ == "__main__":
    main()
