"""Every admin page of the seeded demo opens in a real browser, on PostgreSQL and on SQLite.

`make run` uses SQLite unless told otherwise, and `make test` PostgreSQL: a query only one of
them understands fails on the other. One crawl per database, from the admin index, follows
every admin link (changelists, add forms, the change forms of the demo's objects, custom
pages such as an upstream's Import tools, the dashboard) and expects each to answer 200
without an error on it. The SQLite side is a gunicorn of its own on a migrated, seeded
database file; the PostgreSQL side is the tests' live server.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings as django_settings
from django.db import connections

from apps.demo_shop.seed import SeedResult, demo_seed
from tests.browser.conftest import log_in
from tests.ops.conftest import ROOT, free_port, stop_gunicorn, wait_for_gunicorn
from tests.shipping_upstream import ShippingServer, shipping_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ADMIN_PASSWORD = "crawl-every-page-4f1c"
# The same page for another object is the same code: a few of each are enough.
SAME_PAGE_LIMIT = 2
# Links that change something when followed, or leave the admin.
NOT_FOLLOWED = re.compile(r"/logout/|/delete/|/password/|/issue-key/")
# What a page that went wrong shows: Django's error pages, ToolHub's error envelope, the
# admin's error note and error messages.
LINK = re.compile(r'<a [^>]*href="([^"]+)"')
ERROR_MARKS = ("Traceback", "Server Error", '"status": "error"', "cannot reach", "errornote",
               'class="error"')


@dataclass(frozen=True)
class DemoAdmin:
    url: str
    username: str
    password: str


@pytest.fixture(scope="module")
def demo_shipping(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShippingServer]:
    """The demo shipping MCP server, as `make run` starts it beside the web server."""
    with shipping_server(tmp_path_factory.mktemp("shipping") / "state.json") as server:
        yield server


@pytest.fixture(scope="module")
def sqlite_demo(
    tmp_path_factory: pytest.TempPathFactory, demo_shipping: ShippingServer
) -> Iterator[DemoAdmin]:
    """gunicorn on a SQLite database file, migrated and seeded like `make run` does."""
    var_dir, port = tmp_path_factory.mktemp("sqlite-demo"), free_port()
    env = {
        **{name: value for name, value in os.environ.items() if not name.startswith(("TOOLHUB_", "DJANGO_"))},
        "DJANGO_SETTINGS_MODULE": "toolhub.settings.base",
        "TOOLHUB_VAR_DIR": str(var_dir),
        "DATABASE_URL": f"sqlite:///{var_dir / 'toolhub.sqlite3'}",
        "CACHE_URL": f"filecache://{var_dir / 'cache'}",
        "CELERY_BROKER_URL": django_settings.CELERY_BROKER_URL,
        "TOOLHUB_PORT": str(port),
        "TOOLHUB_DEMO_SHIPPING_MCP_URL": demo_shipping.url,
        "DEMO_SHIPPING_API_KEY": demo_shipping.key,
        "TOOLHUB_EGRESS_ALLOW": f"127.0.0.1:{port},127.0.0.1:{demo_shipping.port}",
        "TOOLHUB_ADMIN_PASSWORD": ADMIN_PASSWORD,
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "1",
        "LOG_LEVEL": "WARNING",
    }
    prepared = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c",
         "from django.core.management import call_command as run; run('migrate', verbosity=0); "
         "run('seed_demo')"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    log_path = var_dir / "gunicorn.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("gunicorn")), "toolhub.wsgi:application"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    url = f"http://127.0.0.1:{port}"
    wait_for_gunicorn(process, url=url, log_path=log_path)
    try:
        yield DemoAdmin(url=url, username="admin", password=ADMIN_PASSWORD)
    finally:
        stop_gunicorn(process, timeout_s=5)


@pytest.fixture
def postgresql_demo(live_server, settings, demo_shipping: ShippingServer) -> DemoAdmin:
    """The live server on the tests' PostgreSQL database, seeded the same way."""
    settings.TOOLHUB_DEMO_PAYMENTS_URL = f"{live_server.url}/demo/payments"
    settings.TOOLHUB_DEMO_SHIPPING_MCP_URL = demo_shipping.url
    settings.TOOLHUB_SECRETS = {**settings.TOOLHUB_SECRETS, "DEMO_SHIPPING_API_KEY": demo_shipping.key}
    settings.TOOLHUB_ADMIN_PASSWORD = ADMIN_PASSWORD
    # Seeding reads the demo MCP server's definitions with asyncio.run, which cannot run in
    # this thread while Playwright's event loop does.
    with ThreadPoolExecutor(max_workers=1) as thread:
        seeded = thread.submit(_seed_and_disconnect).result()
    return DemoAdmin(url=live_server.url, username=seeded.admin_username, password=seeded.admin_password)


def _seed_and_disconnect() -> SeedResult:
    try:
        return demo_seed()
    finally:
        connections.close_all()


def crawl(page, start: str) -> dict[str, tuple[int, str]]:
    """Every admin page reachable from `start` by the links on the pages (query strings
    aside), at most SAME_PAGE_LIMIT of each shape: url → (status, what went wrong or "").
    Pages are fetched with the browser's session but not rendered: a few hundred pages
    rendered with their scripts and charts would take minutes."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(start))
    seen: dict[str, tuple[int, str]] = {}
    shapes: dict[str, int] = {}
    todo = [urlsplit(start).path]
    while todo:
        path = todo.pop(0)
        if path in seen:
            continue
        response = page.request.get(origin + path, max_redirects=0)
        html = response.text()
        seen[path] = (response.status, ", ".join(mark for mark in ERROR_MARKS if mark in html))
        for href in LINK.findall(html):
            link = urlsplit(unescape(href))
            outside = link.netloc or not link.path.startswith("/admin/")
            if outside or link.query or NOT_FOLLOWED.search(link.path):
                continue
            shape = re.sub(r"/[^/]*\d[^/]*/", "/N/", link.path)
            if link.path not in seen and shapes.get(shape, 0) < SAME_PAGE_LIMIT:
                shapes[shape] = shapes.get(shape, 0) + 1
                todo.append(link.path)
    return seen


@pytest.mark.parametrize("database", ["postgresql", "sqlite"])
def test_every_admin_page_of_the_demo_opens_without_an_error(request, database, page):
    # Given the seeded demo on this database, and its admin signed in
    demo: DemoAdmin = request.getfixturevalue(f"{database}_demo")
    log_in(page, f"{demo.url}/admin", demo.username, demo.password)

    # When a curator follows every link of the admin
    pages = crawl(page, f"{demo.url}/admin/")

    # Then each page answered 200 with nothing gone wrong, custom pages included
    failed = {path: result for path, result in pages.items() if result != (200, "")}
    assert failed == {}
    opened = set(pages)
    assert {"/admin/dashboard/", "/admin/imports/openapi/", "/admin/catalog/toolset/add/"} <= opened
    assert any(re.fullmatch(r"/admin/imports/mcp/\d+/", path) for path in opened), "no Import tools page"
    assert any(path.endswith("/try/") for path in opened), "no try-it console"
    assert len(pages) > 80
