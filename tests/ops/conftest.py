"""Fixtures for operations tests: captured JSON logs, a throwaway PostgreSQL, a real gunicorn.

The gateway's fixtures (an agent with a key, published test tools, sessions) are shared.
"""

from __future__ import annotations

import glob
import io
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings as django_settings

from apps.common.logs import JsonFormatter, RequestContextFilter
from tests.gateway.conftest import _reset_runs, agent, api, publish_tool, session_for  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
# The body limit the test gunicorn runs with (TOOLHUB_MAX_BODY_BYTES, the settings' default).
SERVER_MAX_BODY_BYTES = 1_048_576
# The admin's body limit (TOOLHUB_ADMIN_MAX_BODY_BYTES, the settings' default).
SERVER_ADMIN_MAX_BODY_BYTES = 6_291_456
# How long it waits for a request body (TOOLHUB_BODY_READ_TIMEOUT_S), shorter than the
# default so the tests of slow bodies wait less.
SERVER_BODY_READ_TIMEOUT_S = 2


class LogCapture:
    """Every record written while the fixture is active, as the production formatter writes it."""

    def __init__(self) -> None:
        self.stream = io.StringIO()

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.text.splitlines() if line.strip()]


@pytest.fixture
def json_logs() -> Iterator[LogCapture]:
    """Every logger at DEBUG (as with LOG_LEVEL=DEBUG), through the JSON formatter and the
    request-context filter."""
    capture = LogCapture()
    handler = logging.StreamHandler(capture.stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestContextFilter())
    root, django_logger = logging.getLogger(), logging.getLogger("django")
    levels = root.level, django_logger.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    django_logger.setLevel(logging.DEBUG)
    yield capture
    root.removeHandler(handler)
    root.setLevel(levels[0])
    django_logger.setLevel(levels[1])


@pytest.fixture
def broker_down(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The Celery app pointed at a port nobody listens on (the real broker is untouched)."""
    from toolhub.celery import app

    dead = f"redis://127.0.0.1:{free_port()}/0"
    # Celery reads the environment variable before its configuration.
    monkeypatch.setenv("CELERY_BROKER_URL", dead)
    monkeypatch.setitem(app.conf, "broker_url", dead)
    # Connection and producer pools are built once from the URL: start new ones, and get
    # the real ones back when monkeypatch restores these attributes.
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    yield


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate: Any, *, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


class ThrowawayPostgres:
    """A PostgreSQL cluster of the test's own, on a free port: it can be stopped and started
    without touching the shared server other engineers' tests run on."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.directory = Path(tempfile.mkdtemp(prefix="toolhub-pg-"))
        self.data = self.directory / "data"
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/postgres"
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            shutil.chown(self.directory, user="postgres")

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin_dir / tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory} -c fsync=off"
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.directory / "log"), "-w", "start"
        )

    def stop(self) -> None:
        """Like a crash: no checkpoint, every connection cut."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def remove(self) -> None:
        try:
            self.stop()
        except subprocess.CalledProcessError:
            pass  # already stopped
        shutil.rmtree(self.directory, ignore_errors=True)


def postgres_bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@pytest.fixture(scope="package")
def throwaway_postgres() -> Iterator[ThrowawayPostgres]:
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed here")
    cluster = ThrowawayPostgres(bin_dir)
    cluster.init()
    cluster.start()
    yield cluster
    cluster.remove()


@dataclass
class Server:
    """gunicorn (gunicorn.conf.py, two workers) serving the seeded demo on its own database."""

    url: str
    agent_key: str
    metrics_dir: Path
    log_path: Path
    process: subprocess.Popen

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.agent_key}"}, timeout=30
        )

    def session_token(self, subject: str = "u-1001") -> str:
        with self.client() as http:
            response = http.post("/api/v1/sessions", json={"subject": subject, "ttl_s": 3600})
        response.raise_for_status()
        return response.json()["token"]


def _manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="package")
def gunicorn_server(throwaway_postgres: ThrowawayPostgres) -> Iterator[Server]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    metrics_dir = throwaway_postgres.directory / "metrics"
    log_path = Path(django_settings.BASE_DIR) / "var" / "test-gunicorn.log"
    log_path.parent.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "toolhub.settings.base",
        "DATABASE_URL": throwaway_postgres.url,
        "CACHE_URL": django_settings.CACHES["default"]["LOCATION"],
        "CELERY_BROKER_URL": django_settings.CELERY_BROKER_URL,
        "TOOLHUB_DEMO_PAYMENTS_URL": f"{url}/demo/payments",
        "TOOLHUB_EGRESS_ALLOW": f"127.0.0.1:{port}",
        "TOOLHUB_DEFAULT_RATE_LIMIT_PER_MINUTE": "1000000",
        "TOOLHUB_MAX_BODY_BYTES": str(SERVER_MAX_BODY_BYTES),
        "TOOLHUB_ADMIN_MAX_BODY_BYTES": str(SERVER_ADMIN_MAX_BODY_BYTES),
        "TOOLHUB_BODY_READ_TIMEOUT_S": str(SERVER_BODY_READ_TIMEOUT_S),
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "2",
        "LOG_LEVEL": "INFO",
    }
    env.pop("TOOLHUB_METRICS_TOKEN", None)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    # One process for both, with the test settings' fast password hasher: half the time.
    seeded = _manage(
        {**env, "DJANGO_SETTINGS_MODULE": "toolhub.settings.test"},
        "shell",
        "-v",
        "0",
        "-c",
        "from django.core.management import call_command; "
        "call_command('migrate', interactive=False, verbosity=0); call_command('seed_demo')",
    )
    # gunicorn.conf.py empties this directory at start; only gunicorn's processes write to it.
    env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    agent_key = next(line.split("=", 1)[1] for line in seeded.splitlines() if line.startswith("AGENT_KEY="))
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("gunicorn")), "toolhub.wsgi:application"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    wait_for_gunicorn(process, url=url, log_path=log_path)
    yield Server(url=url, agent_key=agent_key, metrics_dir=metrics_dir, log_path=log_path, process=process)
    stop_gunicorn(process)


def wait_for_gunicorn(process: subprocess.Popen, *, url: str, log_path: Path) -> None:
    """Until gunicorn answers /healthz at `url`; its log's end if it exits meanwhile."""

    def up() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"gunicorn exited:\n{log_path.read_text()[-3000:]}")
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(up, timeout_s=30, what=f"gunicorn at {url} to answer /healthz")


def stop_gunicorn(process: subprocess.Popen, *, timeout_s: float = 10) -> None:
    os.killpg(process.pid, signal.SIGINT)  # quick shutdown: no in-flight work to wait for
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:  # a worker stuck (on a stopped cluster, an MCP session): do not hang
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
