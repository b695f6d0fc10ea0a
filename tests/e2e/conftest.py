"""End to end: the seeded demo, called over real loopback HTTP like an agent would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings as django_settings

from apps.catalog.models import ToolVersion
from apps.catalog.services import version_create_draft_from, version_publish, version_save_draft
from apps.demo_shop.seed import demo_seed


class Agent:
    """An agent backend talking to ToolHub over HTTP with the demo key and a user session."""

    def __init__(self, base_url: str, key: str) -> None:
        self.http = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        self.session = ""

    def login(self, subject: str) -> None:
        response = self.http.post("/api/v1/sessions", json={"subject": subject})
        response.raise_for_status()
        self.session = response.json()["token"]

    def invoke(
        self, name: str, arguments: Any, *, task_id: str = "t-1", call_id: str = "call_1", **extra: Any
    ) -> dict[str, Any]:
        body = {"task_id": task_id, "call": {"id": call_id, "name": name, "arguments": arguments}, **extra}
        response = self.http.post("/api/v1/invoke", json=body, headers={"X-ToolHub-Session": self.session})
        assert response.status_code in (200, 202), response.text
        return response.json()


@pytest.fixture
def demo(transactional_db: None, live_server: Any, settings: Any) -> Iterator[Agent]:
    """The seeded demo with the payments upstream served by the live server, logged in as u-1001."""
    settings.TOOLHUB_DEMO_PAYMENTS_URL = f"{live_server.url}/demo/payments"
    seed = demo_seed()
    agent = Agent(live_server.url, seed.agent_key)
    agent.login("u-1001")
    yield agent
    agent.http.close()


@pytest.fixture
def republish_refund() -> Callable[..., ToolVersion]:
    """Publish a new version of refund_payment with a changed executor config or timeout."""

    def republish(*, path: str = "/refunds", url: str | None = None, **fields: Any) -> ToolVersion:
        current = ToolVersion.objects.get(tool__name="refund_payment", status="published")
        draft = version_create_draft_from(version=current, actor="test")
        config = dict(draft.executor_config, path=path)
        if url:
            config.pop("url_setting", None)
            config["url"] = url
        draft.executor_config = config
        for name, value in fields.items():
            setattr(draft, name, value)
        version_save_draft(version=draft, actor="test")
        return version_publish(version=draft, actor="test")

    return republish


@pytest.fixture(scope="session")
def celery_worker(django_db_setup: None, live_server: Any) -> Iterator[subprocess.Popen]:
    """A real Celery worker (prefork, 2 processes) on the test database and the real broker.

    It sees what transactional tests commit, and reaches the payments upstream served by the
    live server. Its log is written to var/test-worker.log for post-mortems.
    """
    from django.db import connection

    from toolhub.celery import app

    database = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "toolhub.settings.test",
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}",
        "CELERY_BROKER_URL": django_settings.CELERY_BROKER_URL,
        "CACHE_URL": django_settings.CACHES["default"]["LOCATION"],
        "TOOLHUB_DEMO_PAYMENTS_URL": f"{live_server.url}/demo/payments",
    }
    app.control.purge()
    log_path = Path(django_settings.BASE_DIR) / "var" / "test-worker.log"
    log_path.parent.mkdir(exist_ok=True)
    with open(log_path, "w") as log:
        worker = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("celery")),
                "-A",
                "toolhub",
                "worker",
                "--pool",
                "prefork",
                "--concurrency",
                "2",
                "--without-gossip",
                "--without-mingle",
                "--loglevel",
                "INFO",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 30
    while "ready." not in log_path.read_text():
        if worker.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the Celery worker did not start:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)
    yield worker
    os.killpg(worker.pid, signal.SIGTERM)
    worker.wait(timeout=30)


def wait_for(predicate: Callable[[], Any], *, timeout_s: float = 20, what: str = "a condition") -> Any:
    """Poll until `predicate()` is truthy; fail the test with `what` otherwise."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
