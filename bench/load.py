"""The measuring instruments of `make bench`: the server under test, wrk, a stopwatch, the admin."""

from __future__ import annotations

import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
LUA = ROOT / "bench" / "load.lua"
WRK_THREADS = 2


@dataclass(frozen=True)
class Load:
    """What wrk measured (throughput, latency percentiles), and the CPU seconds the app
    server and the database spent meanwhile (bench/cpu.py)."""

    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    app_cpu_s: float = 0.0
    db_cpu_s: float = 0.0

    @property
    def app_cpu_ms(self) -> float:
        """App server CPU per request."""
        return self.app_cpu_s * 1000 / self.requests

    @property
    def db_cpu_ms(self) -> float:
        """PostgreSQL CPU per request."""
        return self.db_cpu_s * 1000 / self.requests

    @property
    def cpu_ms(self) -> float:
        return self.app_cpu_ms + self.db_cpu_ms

    @classmethod
    def of_turns(cls, turns: Sequence[Load]) -> Load:
        """Several equally long runs of one load as one: mean throughput, median p50, worst
        p99, CPU summed."""
        return cls(
            rps=statistics.mean(t.rps for t in turns),
            p50_ms=statistics.median(t.p50_ms for t in turns),
            p99_ms=max(t.p99_ms for t in turns),
            requests=sum(t.requests for t in turns),
            app_cpu_s=sum(t.app_cpu_s for t in turns),
            db_cpu_s=sum(t.db_cpu_s for t in turns),
        )


@dataclass(frozen=True)
class Timings:
    """Wall times of requests made one after another, in ms."""

    samples: tuple[float, ...]

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.samples)

    @property
    def max_ms(self) -> float:
        return max(self.samples)


SERVER_LOG = ROOT / "var" / "bench-gunicorn.log"


@dataclass(frozen=True)
class Server:
    base_url: str
    process_group: int


@contextmanager
def gunicorn(*, port: int, workers: int, threads: int, env: dict[str, str]) -> Iterator[Server]:
    """The app under gunicorn on loopback, configured as in production (gunicorn.conf.py:
    gthread workers) but for the bind, workers, threads and log level, in a process group of
    its own. What the server says (worker timeouts, warnings) goes to SERVER_LOG, not into
    the report."""
    base_url = f"http://127.0.0.1:{port}"
    SERVER_LOG.parent.mkdir(exist_ok=True)
    with open(SERVER_LOG, "w") as log:
        server = subprocess.Popen(
            [str(Path(sys.executable).with_name("gunicorn")), "toolhub.wsgi",
             "-c", str(ROOT / "gunicorn.conf.py"), "-b", f"127.0.0.1:{port}",
             "-w", str(workers), "--threads", str(threads), "--log-level", "warning"],
            cwd=ROOT, env=env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            wait_until_healthy(base_url, server, what="gunicorn", log=SERVER_LOG)
            yield Server(base_url=base_url, process_group=server.pid)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)


def wait_until_healthy(
    base_url: str, process: subprocess.Popen, *, what: str, log: Path, seconds: int = 30
) -> None:
    """Until `process` answers `base_url`/healthz; SystemExit naming `what` and its `log` when
    it exits or does not answer within `seconds`."""
    for _ in range(seconds * 5):
        if process.poll() is not None:
            raise SystemExit(f"{what} exited ({process.returncode}); is {base_url} free? See {log}.")
        try:
            if httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{what} did not answer {base_url}/healthz within {seconds} s; see {log}.")


def wrk(
    base_url: str,
    path: str,
    *,
    headers: dict[str, str],
    seconds: int,
    connections: int,
    kind: str | None = None,
    script_args: Sequence[str] = (),
) -> Load:
    """Load `path` for `seconds` with `connections` (wrk: WRK_THREADS threads at most).

    `kind` and `script_args` select the request load.lua makes; without them, a plain GET.
    Stops the benchmark when any answer was not the expected success.
    """
    threads = min(WRK_THREADS, connections)
    # wrk gives up on an answer after 2 s by default; a fresh server's first answers take up
    # to 2 s here (each worker loads its URLs, serializers and connections on first use).
    # Over 10 s is a failure.
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "--latency"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    if kind:
        command += ["-s", str(LUA), base_url + path, "--", kind, *script_args]
    else:
        command.append(base_url + path)
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    if "unexpected answer" in output or "Non-2xx" in output or "error" in output.lower():
        print(output)
        raise SystemExit("the benchmark saw error answers; the figures would be meaningless")
    return Load(
        rps=float(_find(r"Requests/sec:\s+([\d.]+)", output)),
        p50_ms=_ms(_find(r"50%\s+([\d.]+\w+)", output)),
        p99_ms=_ms(_find(r"99%\s+([\d.]+\w+)", output)),
        requests=int(_find(r"(\d+) requests in", output)),
    )


def _find(pattern: str, text: str) -> str:
    match = re.search(pattern, text)
    if match is None:
        raise SystemExit(f"wrk's output has no {pattern!r}:\n{text}")
    return match.group(1)


def _ms(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(\w+)", value).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def stopwatch(send: Callable[[int], httpx.Response], *, times: int) -> Timings:
    """Send `times` requests one after another; each must answer 200."""
    samples = []
    for i in range(times):
        started = time.perf_counter()
        response = send(i)
        samples.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"{response.request.url} answered {response.status_code}: {response.text[:300]}")
    return Timings(tuple(samples))


def admin_client(base_url: str, *, username: str, password: str) -> httpx.Client:
    """An httpx client logged in to the Django admin (session and CSRF cookies)."""
    client = httpx.Client(base_url=base_url, timeout=300, follow_redirects=False)
    login = client.get("/admin/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
    if token is None:
        raise SystemExit("the admin login page has no CSRF token")
    answer = client.post(
        "/admin/login/?next=/admin/",
        data={"csrfmiddlewaretoken": token.group(1), "username": username, "password": password,
              "next": "/admin/"},
        headers={"Referer": f"{base_url}/admin/login/"},
    )
    if answer.status_code != 302:
        raise SystemExit(f"admin login failed ({answer.status_code}); is seed_demo's admin there?")
    return client
