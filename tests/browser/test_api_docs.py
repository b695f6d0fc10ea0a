"""The API docs in a real browser that may reach nothing but ToolHub itself.

Swagger UI and ReDoc come from drf-spectacular-sidecar's static files, so the pages work
offline and never load a CDN's "latest".
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def _only_the_server(page, live_server_url: str) -> list[str]:
    """Abort every request to another host than the live server; return what was refused."""
    server = urlsplit(live_server_url).netloc
    refused: list[str] = []

    def route(request_route) -> None:
        url = request_route.request.url
        if urlsplit(url).netloc == server or url.startswith(("data:", "blob:")):
            request_route.continue_()
        else:
            refused.append(url)
            request_route.abort()

    page.route("**/*", route)
    return refused


def test_swagger_ui_shows_the_operations_with_every_outside_request_blocked(page, live_server):
    refused = _only_the_server(page, live_server.url)

    page.goto(f"{live_server.url}/api/docs/")

    expect(page.get_by_text("/api/v1/invoke", exact=True)).to_be_visible()
    expect(page.get_by_text("/api/v1/sessions", exact=True)).to_be_visible()
    assert refused == []


def test_redoc_shows_the_operations_with_every_outside_request_blocked(page, live_server):
    refused = _only_the_server(page, live_server.url)

    page.goto(f"{live_server.url}/api/redoc/")

    expect(page.get_by_role("heading", name="One tool call through the whole pipeline")).to_be_visible()
    expect(page.get_by_text("/api/v1/invoke", exact=True).first).to_be_attached()
    assert refused == []
