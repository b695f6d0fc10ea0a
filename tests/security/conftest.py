"""Fixtures of the security tests: an agent with a key, a session, tools that record runs,
and an MCP connection. The gateway tests' fixtures are reused, not copied."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from apps.tenancy.services import agent_key_issue
from tests.gateway.conftest import _reset_runs, agent, api, publish_tool, session_for  # noqa: F401

MCP_VERSION = "2025-06-18"


@dataclass
class Caller:
    """An agent as it calls ToolHub over HTTP: its key, an end user's session, an MCP session."""

    client: Client
    key: str
    session: str
    mcp_session: str

    def headers(self, **extra: str) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.key}", "HTTP_X_TOOLHUB_SESSION": self.session, **extra}

    def post(self, path: str, body: bytes | str, content_type: str = "application/json", **extra: str):
        if path.startswith("/mcp"):
            extra.setdefault("HTTP_MCP_SESSION_ID", self.mcp_session)
        return self.client.post(path, body, content_type=content_type, **self.headers(**extra))

    def post_json(self, path: str, body: Any, **extra: str):
        return self.post(path, json.dumps(body), **extra)


def mcp_initialize(client: Client, key: str) -> str:
    body = {
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": MCP_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"},
        },
    }
    response = client.post(
        "/mcp", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert response.status_code == 200, response.content
    return response["Mcp-Session-Id"]


@pytest.fixture
def caller(agent, session_for) -> Caller:  # noqa: F811
    client = Client()
    key = agent_key_issue(agent=agent).secret
    return Caller(client=client, key=key, session=session_for("u-1"), mcp_session=mcp_initialize(client, key))


@pytest.fixture
def recording_tools(publish_tool) -> None:  # noqa: F811
    """`finder` (readonly) and `writer` (write), both run by tests.echo and bound to the session user."""
    publish_tool("finder")
    publish_tool("writer", side_effect="write")
