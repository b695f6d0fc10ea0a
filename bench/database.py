"""The bench's own database: dropped, recreated, migrated and seeded for every run.

Every bench entry point (bench/run.py, cpu_in_process.py, http_tool.py) starts from the same
empty ledger this way. Django is set up here, with the bench's environment (config.ENV).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import psycopg

from .config import DATABASE_URL, ENV, say

if TYPE_CHECKING:
    from .calls import Access


def fresh_database() -> None:
    """Drop and recreate the bench database: every run starts from the same empty ledger."""
    name = urlsplit(DATABASE_URL).path.lstrip("/")
    if "bench" not in name:
        raise SystemExit(f"BENCH_DATABASE_URL names {name!r}: the bench drops its database, so its "
                         "name must contain 'bench'.")
    server = urlsplit(DATABASE_URL)._replace(path="/postgres").geturl()
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def seeded_bench(*, bench_tools: bool, order_slots: int | None = None) -> Access:
    """A fresh bench database, migrated, with Django set up on it, its cache emptied and the
    demo seeded (with the bench's own tools and orders to cancel when `bench_tools`; all
    order slots unless `order_slots` says how many): who the bench calls as."""
    fresh_database()
    os.environ.update(ENV)
    import django

    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command

    from apps.demo_shop.seed import demo_seed

    from .calls import access_of
    from .seed import bench_seed

    say("Migrating and seeding a fresh bench database…")
    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    cache.clear()  # the bench's own cache database: counters and memos of an earlier run
    access = access_of(demo_seed())
    if bench_tools:
        bench_seed() if order_slots is None else bench_seed(slots=order_slots)
    return access
