"""A published stdio MCP server (mcp-server-time, from PyPI) served through the bridge."""

from __future__ import annotations

import json

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
