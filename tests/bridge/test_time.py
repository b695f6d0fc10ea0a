"""A published stdio MCP server (mcp-server-time, from PyPI) served through the bridge."""

from __future__ import annotations

import asyncio
import json

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from .conftest import headers_for, on_bridge, time_launcher, url_for


def test_the_time_server_lists_and_answers_get_current_time(mcp_bridge):
    # Given the time server's launcher, as ToolHub sends it
    headers = headers_for(time_launcher())
    url = url_for(upstream_id=1, tenant_id=1)

    # When a client lists its tools and calls get_current_time
    async def work(session):
        listed = await session.list_tools()
        answer = await session.call_tool("get_current_time", {"timezone": "UTC"})
        return listed, answer

    listed, answer = on_bridge(url, headers, work)

    # Then the server's own tools and answer come back
    assert "get_current_time" in {tool.name for tool in listed.tools}
    assert not answer.is_error
    text = answer.content[0]
    assert isinstance(text, TextContent)
    assert json.loads(text.text)["timezone"] == "UTC"


def test_the_2025_11_25_handshake_is_served_too(mcp_bridge):
    # Given a client that speaks only the initialize handshake
    headers = headers_for(time_launcher())

    async def run():
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0), trust_env=False) as http,
            streamable_http_client(url_for(upstream_id=2, tenant_id=1), http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            initialized = await session.initialize()
            return initialized, await session.call_tool("get_current_time", {"timezone": "UTC"})

    initialized, answer = asyncio.run(run())

    assert initialized.protocol_version == "2025-11-25"
    assert not answer.is_error
