"""`make profile`: the scenarios whose time bench/stage_profile.py takes apart, in-process."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import close_old_connections
from django.test import Client

from .calls import Access, bare_cancel_body, cancel_arguments, invoke_body
from .config import (
    BARE_SEARCH,
    PROFILE_BARE_ORDERS,
    PROFILE_CALLS,
    PROFILE_ORDERS,
    PROFILE_REPLAYED_ORDER,
    SEARCH_ARGUMENTS,
    SPARE_SLOT,
    say,
)
from .seed import order_slot
from .stage_profile import Scenario, format_profile, profile_libraries, profile_stages


def _meta(headers: dict[str, str]) -> dict[str, str]:
    """HTTP headers as Django's test client takes them."""
    return {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()
            if name != "Content-Type"}


def _post(client: Client, path: str, body: str, headers: dict[str, str]) -> Any:
    close_old_connections()  # what the WSGI handler does at the start of every request
    response = client.post(path, body, content_type="application/json", **headers)
    if response.status_code != 200 or b'"error"' in response.content:
        raise SystemExit(f"a profiled call failed: {response.content[:300]!r}")
    return response


def _get(client: Client, path: str) -> Any:
    close_old_connections()
    return client.get(path)


def scenarios(access: Access) -> list[Scenario]:
    search, cancel, shop = _meta(access.search), _meta(access.cancel), _meta(access.shop)
    run = uuid.uuid4().hex[:8]
    spare = order_slot(SPARE_SLOT)
    replayed = invoke_body(
        f"p-{run}-replay", "cancel_order", cancel_arguments(spare + PROFILE_REPLAYED_ORDER)
    )
    return [
        Scenario("governed search_orders (readonly)", lambda c, i: _post(
            c, "/api/v1/invoke", invoke_body(f"p-{run}-s{i}", "search_orders", SEARCH_ARGUMENTS), search)),
        Scenario("governed cancel_order (write: intent + commit)", lambda c, i: _post(
            c, "/api/v1/invoke",
            invoke_body(f"p-{run}-{i}", "cancel_order", cancel_arguments(spare + PROFILE_ORDERS + i)),
            cancel)),
        # The first (warm-up) call commits the key; every later one replays it.
        Scenario("replay of a committed cancel_order key", lambda c, i: _post(
            c, "/api/v1/invoke", replayed, cancel)),
        Scenario("bare DRF cancel (baseline)", lambda c, i: _post(
            c, "/demo/orders/cancel", bare_cancel_body(spare + PROFILE_BARE_ORDERS + i), shop)),
        Scenario("bare DRF search (baseline)", lambda c, i: _get(c, BARE_SEARCH)),
    ]


def profile(access: Access) -> list[str]:
    """The stage table of every scenario, then the write's CPU time by library."""
    every = scenarios(access)
    say(f"Profiling in-process, {PROFILE_CALLS} calls per scenario…")
    lines: list[str] = []
    for stages in profile_stages(every, calls=PROFILE_CALLS):
        lines += [*format_profile(stages), ""]
    write = every[1]
    # Numbered after the stage profile's calls, so every call cancels an order of its own.
    libraries = profile_libraries(write, calls=PROFILE_CALLS, start=PROFILE_CALLS + 100)
    total = sum(ms for _, ms in libraries)
    lines.append(f"{write.name} under cProfile: own time per call by library, request thread only "
                 f"({total:.2f} ms, cProfile's overhead included)")
    lines += [f"  {name:<38}{ms:>7.3f}{ms / total:>7.0%}" for name, ms in libraries[:12]]
    return lines
