"""Fixtures of the demo shop tests: the payments upstream over real loopback HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.conf import settings


@pytest.fixture
def payments_auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {settings.TOOLHUB_SECRETS['DEMO_PAYMENTS_API_KEY']}"}


@pytest.fixture
def payments(live_server: Any, payments_auth: dict[str, str]) -> Iterator[httpx.Client]:
    """An HTTP client of the payments upstream over real loopback HTTP, authenticated."""
    with httpx.Client(
        base_url=f"{live_server.url}/demo/payments", headers=payments_auth, timeout=10.0
    ) as client:
        yield client
