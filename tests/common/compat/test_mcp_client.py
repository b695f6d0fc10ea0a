"""Canary: the MCP SDK's connect policy keeps the shape the mcp executor calls it with
(apps/common/compat/mcp_client.py); its behaviour on a modern and a handshake-only server is
tested against real servers in tests/gateway/executors/mcp/test_mcp_revisions.py."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
from mcp import ClientSession

from apps.common.compat.mcp_client import negotiate_auto, stamped_headers


def test_the_connect_policy_is_a_coroutine_taking_the_session():
    assert inspect.iscoroutinefunction(negotiate_auto)
    assert list(inspect.signature(negotiate_auto).parameters) == ["session"]


def test_a_session_still_keeps_what_the_policy_settles_on():
    # One of the two is set once the policy returns; the executor's revision depends on it.
    assert {"discover_result", "initialize_result"} <= set(dir(ClientSession))


def test_a_request_is_stamped_as_the_session_would_send_it():
    # given: a session not yet connected (its stamp adds no revision yet)
    send, receive = anyio.create_memory_object_stream[Any](0)
    session = ClientSession(receive, send)
    data = {"method": "tools/call", "params": {"name": "track_shipment", "arguments": {}}}

    # when
    headers = stamped_headers(session, data)

    # then: the tool's name travels in its header, as send_request would put it
    assert headers == {"mcp-name": "track_shipment"}
    assert data == {"method": "tools/call", "params": {"name": "track_shipment", "arguments": {}}}
