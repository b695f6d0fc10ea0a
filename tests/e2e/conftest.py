"""End to end: the seeded demo, called over real loopback HTTP like an agent would."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from apps.catalog.models import ToolVersion
from apps.catalog.services import version_create_draft_from, version_publish, version_save_draft
from apps.demo_shop.services import demo_seed


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

    def republish(
        *, path: str = "/refunds", url: str | None = None, timeout_s: float | None = None
    ) -> ToolVersion:
        current = ToolVersion.objects.get(tool__name="refund_payment", status="published")
        draft = version_create_draft_from(version=current, actor="test")
        config = dict(draft.executor_config, path=path)
        if url:
            config.pop("url_setting", None)
            config["url"] = url
        draft.executor_config = config
        if timeout_s:
            draft.timeout_s = timeout_s
        version_save_draft(version=draft, actor="test")
        return version_publish(version=draft, actor="test")

    return republish
