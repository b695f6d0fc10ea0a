"""What the bench sends: who it is (agent key, sessions, the shop's key) and the call bodies."""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx
from django.conf import settings

from apps.demo_shop.seed import SeedResult
from apps.tenancy.models import Agent
from apps.tenancy.services import session_mint

from .seed import BENCH_USER, IMPORTED_TOOL, REFUNDED_ORDER, order_id

# The imported GET: the `call` of a governed invoke listing REFUNDED_ORDER's refunds, and
# the bench's baseline view of the same listing (bench/views.py).
IMPORTED_CALL = json.dumps(
    {"id": "c1", "name": IMPORTED_TOOL, "arguments": json.dumps({"order_id": REFUNDED_ORDER})}
)
BARE_IMPORTED = f"/bench/orders/{REFUNDED_ORDER}/refunds"
# The same call as an MCP tools/call's params (ToolHub's own /mcp).
IMPORTED_PARAMS = json.dumps({"name": IMPORTED_TOOL, "arguments": {"order_id": REFUNDED_ORDER}})

PROTOCOL_VERSION = "2025-06-18"
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
# ToolHub's /mcp answers a result's envelope.
TOOLHUB_OK = '"isError": false'


@dataclass(frozen=True)
class Access:
    admin_username: str
    admin_password: str
    search: dict[str, str]  # HTTP headers: agent key and a session of u-1001 (the demo's orders)
    cancel: dict[str, str]  # HTTP headers: agent key and a session of the bench user (orders to cancel)
    shop: dict[str, str]  # HTTP headers: the demo shop's own API key


def access_of(demo: SeedResult) -> Access:
    agent = Agent.objects.get(tenant__slug="demo", name="support-bot")

    def headers(subject: str) -> dict[str, str]:
        token, _ = session_mint(
            tenant_id=agent.tenant_id, agent_id=agent.pk, subject=subject, attributes={}, ttl_s=86_400
        )
        return {"Authorization": f"Bearer {demo.agent_key}", "Content-Type": "application/json",
                "X-ToolHub-Session": token}

    return Access(
        admin_username=demo.admin_username,
        admin_password=demo.admin_password,
        search=headers("u-1001"),
        cancel=headers(BENCH_USER),
        shop={"Authorization": f"Bearer {settings.TOOLHUB_SECRETS['DEMO_PAYMENTS_API_KEY']}",
              "Content-Type": "application/json"},
    )


def invoke_body(task_id: str, tool: str, arguments: str, call_id: str = "c1") -> str:
    return json.dumps({"task_id": task_id, "call": {"id": call_id, "name": tool, "arguments": arguments}})


def cancel_arguments(order_number: int) -> str:
    return json.dumps({"order_id": order_id(order_number), "reason": "customer_request"})


def bare_cancel_body(order_number: int) -> str:
    return json.dumps(
        {"user_id": BENCH_USER, "order_id": order_id(order_number), "reason": "customer_request"}
    )


def mcp_session(url: str, headers: dict[str, str]) -> str:
    """A session of the MCP server at `url`: initialize, then the initialized notification."""
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}
    answer = httpx.post(url, json=hello, headers={**MCP_HEADERS, **headers}, timeout=30)
    session_id = answer.headers.get("mcp-session-id")
    if answer.status_code != 200 or not session_id:
        raise SystemExit(f"{url} refused initialize ({answer.status_code}): {answer.text[:300]}")
    session = {**headers, "Mcp-Session-Id": session_id, "MCP-Protocol-Version": PROTOCOL_VERSION}
    httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
               headers={**MCP_HEADERS, **session}, timeout=30)
    return session_id
