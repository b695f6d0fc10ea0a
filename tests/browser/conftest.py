"""A real browser (Debian's chromium, headless) on the real admin served by live_server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)


# Module scope: Playwright's event loop must be gone before tests that run their own
# (the MCP client tests use asyncio.run).
@pytest.fixture(scope="module")
def browser() -> Iterator:
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is not installed: `make test` (scripts/test.sh) installs it")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread while it runs; the tests' own
    # ORM calls are still plain synchronous code. Only for this module: a subprocess started
    # by a later test (check --deploy) must not inherit it.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = launch_chromium(playwright)
            yield chromium
            chromium.close()
    finally:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    context.close()


def log_in(page, admin_url: str, username: str, password: str) -> None:
    """Sign in on the admin's login page as a person would."""
    page.goto(f"{admin_url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
