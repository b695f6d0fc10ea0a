"""The MCP loads of `make bench` (`python -m bench.run --mcp`: only these).

1. federated: ToolHub's /mcp `tools/call` of track_shipment, a tool of the demo shipping MCP
   server (apps/demo_shop/shipping) imported by seed_demo, vs the same wrk load calling that
   server's own /mcp directly. CPU per request counts everything a load keeps busy: for the
   federated call ToolHub's gunicorn, PostgreSQL and the shipping server; for the direct one
   the shipping server.
2. ToolHub's own /mcp `tools/call` of search_orders vs REST invoke of the same call: the MCP
   layer should cost at most MCP_OVER_REST_LIMIT more CPU per request than REST.

Both sides of a pair take turns (over_http.take_turns) and use a new JSON-RPC id and task
per request, so nothing is replayed or looped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from django.conf import settings

from .calls import MCP_HEADERS, PROTOCOL_VERSION, TOOLHUB_OK, Access, mcp_session
from .config import (
    MCP_PORT,
    ROUNDS,
    SEARCH_ARGUMENTS,
    SECONDS,
    WARM_UP_SECONDS,
    load_average,
    say,
)
from .cpu import process_group
from .load import ROOT, Load, Server, wait_until_healthy
from .over_http import Target, take_turns

SHIPPING_LOG = ROOT / "var" / "bench-shipping.log"
SHIPPING_STATE = ROOT / "var" / "bench-shipping.json"
TRACK_PARAMS = json.dumps({"name": "track_shipment", "arguments": {"shipment_id": "SHP-000042"}})
SEARCH_PARAMS = json.dumps({"name": "search_orders", "arguments": json.loads(SEARCH_ARGUMENTS)})
# The shipping server (SDK, JSON or SSE) answers the tool's result.
SHIPPING_OK = '"structuredContent":{"shipment_id":"SHP-000042"'


@dataclass(frozen=True)
class McpFigures:
    loads: dict[str, Load]

    @property
    def federated_rps_ratio(self) -> float:
        return self.loads["mcp_federated"].rps / self.loads["mcp_direct"].rps

    @property
    def federated_cpu_ratio(self) -> float:
        return self.loads["mcp_direct"].cpu_ms / self.loads["mcp_federated"].cpu_ms

    @property
    def mcp_over_rest(self) -> float:
        """How much more CPU per request ToolHub's /mcp costs than REST invoke (0.05: 5 %)."""
        return self.loads["mcp_own"].cpu_ms / self.loads["rest_own"].cpu_ms - 1


@contextmanager
def shipping_server() -> Iterator[int]:
    """The demo shipping MCP server on MCP_PORT, from an empty state, in a process group of its
    own (its id yielded); its log goes to SHIPPING_LOG."""
    SHIPPING_STATE.unlink(missing_ok=True)
    with open(SHIPPING_LOG, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "apps.demo_shop.shipping", "--port", str(MCP_PORT),
             "--state", str(SHIPPING_STATE)],
            cwd=ROOT, start_new_session=True, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "DEMO_SHIPPING_API_KEY": settings.TOOLHUB_SECRETS["DEMO_SHIPPING_API_KEY"]},
        )
    try:
        wait_until_healthy(f"http://127.0.0.1:{MCP_PORT}", process, what="the shipping MCP server",
                           log=SHIPPING_LOG, seconds=20)
        yield process.pid
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def _checked(url: str, headers: dict[str, str], params: str, expect: str) -> None:
    """One call as wrk will make it, which must answer what wrk will look for."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": json.loads(params)}
    answer = httpx.post(url, json=body, headers={**headers, "X-ToolHub-Task": "bench-mcp-check"}, timeout=30)
    if answer.status_code != 200 or expect not in answer.text:
        raise SystemExit(f"{url} answered {answer.status_code} without {expect!r}: {answer.text[:400]}")


def measure_mcp(server: Server, access: Access, shipping_pid: int) -> McpFigures:
    toolhub = f"{server.base_url}/mcp"
    direct_base = f"http://127.0.0.1:{MCP_PORT}"
    agent = {**MCP_HEADERS, **access.search}
    agent["Mcp-Session-Id"] = mcp_session(toolhub, access.search)
    key = {"Authorization": f"Bearer {settings.TOOLHUB_SECRETS['DEMO_SHIPPING_API_KEY']}"}
    upstream = {**MCP_HEADERS, **key, "MCP-Protocol-Version": PROTOCOL_VERSION,
                "Mcp-Session-Id": mcp_session(f"{direct_base}/mcp", key)}
    _checked(toolhub, agent, TRACK_PARAMS, TOOLHUB_OK)
    _checked(toolhub, agent, SEARCH_PARAMS, TOOLHUB_OK)
    _checked(f"{direct_base}/mcp", upstream, TRACK_PARAMS, SHIPPING_OK)
    federated = [
        Target("mcp_direct", "shipping server's /mcp directly: track_shipment", "/mcp", upstream, kind="mcp",
               body=TRACK_PARAMS, expect=SHIPPING_OK, base_url=direct_base),
        Target("mcp_federated", "ToolHub /mcp → shipping server: track_shipment", "/mcp", agent, kind="mcp",
               body=TRACK_PARAMS, expect=TOOLHUB_OK),
    ]
    own = [
        Target("rest_own", "ToolHub REST invoke: search_orders", "/api/v1/invoke", access.search,
               kind="search"),
        Target("mcp_own", "ToolHub /mcp tools/call: search_orders", "/mcp", agent, kind="mcp",
               body=SEARCH_PARAMS, expect=TOOLHUB_OK),
    ]

    def shipping() -> list[int]:
        return process_group(shipping_pid)

    say(f"MCP warm-up (load average {load_average()}):")
    take_turns(server, [*federated, *own], seconds=WARM_UP_SECONDS, rounds=1, upstream_pids=shipping)
    say(f"MCP load runs, {ROUNDS} turns each (load average {load_average()}):")
    return McpFigures(loads={
        **take_turns(server, federated, seconds=SECONDS, rounds=ROUNDS, upstream_pids=shipping),
        **take_turns(server, own, seconds=SECONDS, rounds=ROUNDS, upstream_pids=shipping),
    })
