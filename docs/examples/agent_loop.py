"""A complete agent loop against ToolHub's demo, with a scripted model instead of a real one.

Shows the three ways an agent plugs in, with no glue code between model and ToolHub:
OpenAI-style (Chat Completions tool_calls → POST /api/v1/adapters/openai), Anthropic-style
(tool_use blocks → POST /api/v1/adapters/anthropic) and MCP (/mcp with the official MCP
client). The "model" is a fixed list of assistant turns, so it runs without any API key;
everything it prints is exactly what the model would read.

    .venv/bin/python docs/examples/agent_loop.py --base-url http://127.0.0.1:8000 --agent-key "$AGENT_KEY"

`make run` prints the demo's AGENT_KEY. Options: --subject (the end user, default u-1001)
or --session (a session token your backend already minted), --show (characters of each
result to print, default 400).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

import httpx
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

TOOLSET, PHASE = "support", "lookup"
SEARCH = {"status": "paid", "start_date": "2026-01-01", "end_date": "2026-01-31", "limit": 5}

# What a model would answer, turn by turn: (tool name, arguments) per call of the turn.
SCRIPT: list[list[tuple[str, dict[str, Any]]]] = [
    # Two reads in one turn: ToolHub runs them concurrently, answers in order.
    [("search_orders", SEARCH), ("get_order", {"order_id": "ORD-000001"})],
    # A free-text status: refused with the allowed values, before anything runs.
    [("search_orders", {**SEARCH, "status": "not cancelled"})],
    # A tool this agent does not have here: the hint names the closest tools.
    [("export_orders_csv", {"month": "2026-01"})],
    # The way out: tell the operators, then tell the user.
    [
        (
            "request_capability",
            {
                "capability": "export orders as CSV",
                "reason": "The user wants a spreadsheet of January's paid orders.",
                "example_arguments": json.dumps({"month": "2026-01"}),
            },
        )
    ],
]


def shown(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ToolHub:
    def __init__(self, base_url: str, agent_key: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = httpx.Client(
            base_url=self.base_url, headers={"Authorization": f"Bearer {agent_key}"}, timeout=30
        )

    def mint_session(self, subject: str) -> str:
        response = self.http.post("/api/v1/sessions", json={"subject": subject, "ttl_s": 900})
        response.raise_for_status()
        return response.json()["token"]

    def tools(self, fmt: str) -> dict[str, Any]:
        response = self.http.get("/api/v1/tools", params={"format": fmt, "toolset": TOOLSET, "phase": PHASE})
        response.raise_for_status()
        return response.json()

    def adapter(self, vendor: str, body: dict[str, Any], session: str) -> dict[str, Any]:
        response = self.http.post(
            f"/api/v1/adapters/{vendor}",
            json={**body, "toolset": TOOLSET, "phase": PHASE},
            headers={"X-ToolHub-Session": session},
        )
        response.raise_for_status()
        return response.json()


def show_export(hub: ToolHub, fmt: str) -> None:
    export = hub.tools(fmt)
    names = [t["function"]["name"] if fmt == "openai" else t["name"] for t in export["tools"]]
    print(f"tools ({fmt}, ~{export['token_estimate']} tokens): {', '.join(names)}")


def openai_loop(hub: ToolHub, session: str, limit: int) -> None:
    print("\n== OpenAI-style loop: POST /api/v1/adapters/openai")
    show_export(hub, "openai")
    conversation: list[dict[str, Any]] = [{"role": "user", "content": "Which of my January orders are paid?"}]
    for turn, calls in enumerate(SCRIPT, start=1):
        # The assistant message exactly as the Chat Completions API returns it.
        assistant = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{turn}_{n}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
                for n, (name, arguments) in enumerate(calls, start=1)
            ],
        }
        conversation.append(assistant)
        answer = hub.adapter("openai", {"task_id": "demo-openai", "message": assistant}, session)
        conversation.extend(answer["messages"])
        for message in answer["messages"]:
            print(f"model reads ({message['tool_call_id']}): {shown(message['content'], limit)}")
    print(f"conversation: {len(conversation)} messages, ready for the next model call")


def anthropic_loop(hub: ToolHub, session: str, limit: int) -> None:
    print("\n== Anthropic-style loop: POST /api/v1/adapters/anthropic")
    show_export(hub, "anthropic")
    conversation: list[dict[str, Any]] = [{"role": "user", "content": "Which of my January orders are paid?"}]
    for turn, calls in enumerate(SCRIPT, start=1):
        # The assistant turn as the Messages API returns it: text and tool_use blocks.
        assistant = {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                *[
                    {"type": "tool_use", "id": f"toolu_{turn}_{n}", "name": name, "input": arguments}
                    for n, (name, arguments) in enumerate(calls, start=1)
                ],
            ],
        }
        conversation.append(assistant)
        answer = hub.adapter("anthropic", {"task_id": "demo-anthropic", "message": assistant}, session)
        conversation.append(answer)
        for block in answer["content"]:
            flag = " (is_error)" if block["is_error"] else ""
            print(f"model reads ({block['tool_use_id']}){flag}: {shown(block['content'], limit)}")
    print(f"conversation: {len(conversation)} messages, ready for the next model call")


async def mcp_loop(base_url: str, agent_key: str, session: str, limit: int) -> None:
    print("\n== MCP: /mcp with the official MCP client")
    headers = {"Authorization": f"Bearer {agent_key}", "X-ToolHub-Session": session}
    url = f"{base_url.rstrip('/')}/mcp?toolset={TOOLSET}&phase={PHASE}"
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as mcp:
                init = await mcp.initialize()
                print(f"server: {init.server_info.name}, protocol {init.protocol_version}")
                listed = await mcp.list_tools()
                print(f"tools (mcp): {', '.join(tool.name for tool in listed.tools)}")
                for calls in SCRIPT:
                    for name, arguments in calls:
                        result = await mcp.call_tool(name, arguments)
                        flag = " (isError)" if result.is_error else ""
                        print(f"model reads ({name}){flag}: {shown(result.content[0].text, limit)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--agent-key", required=True)
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--subject", default="u-1001", help="the end user to mint a session for")
    who.add_argument("--session", help="a session token minted already (X-ToolHub-Session)")
    parser.add_argument("--show", type=int, default=400, help="characters of each result to print")
    args = parser.parse_args(argv)

    hub = ToolHub(args.base_url, args.agent_key)
    session = args.session or hub.mint_session(args.subject)
    openai_loop(hub, session, args.show)
    anthropic_loop(hub, session, args.show)
    asyncio.run(mcp_loop(args.base_url, args.agent_key, session, args.show))
    return 0


if __name__ == "__main__":
    sys.exit(main())
