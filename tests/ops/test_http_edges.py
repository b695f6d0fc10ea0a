"""HTTP at the edges, against a real gunicorn: bodies over the limit and chunked bodies.

http.client is used on purpose: it keeps one connection open as long as the server
promises keep-alive, and opens a new one when the server says `Connection: close`, as a
well-behaved client does.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.ops.conftest import SERVER_MAX_BODY_BYTES, Server

pytestmark = pytest.mark.slow


def _connection(server: Server) -> http.client.HTTPConnection:
    address = urlsplit(server.url)
    return http.client.HTTPConnection(address.hostname, address.port, timeout=30)


def _headers(server: Server, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.agent_key}", "Content-Type": "application/json", **extra}


def _get_order_body(task_id: str) -> bytes:
    call = {"id": "c1", "name": "get_order", "arguments": {"order_id": "ORD-000001"}}
    return json.dumps({"task_id": task_id, "call": call}).encode()


def _in_chunks(body: bytes, size: int = 16 * 1024) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


def _oversized_body() -> bytes:
    call = {"id": "c1", "name": "get_order", "arguments": {"p": "x" * SERVER_MAX_BODY_BYTES}}
    return json.dumps({"task_id": "big", "call": call}).encode()


def _next_request_works(conn: http.client.HTTPConnection) -> bool:
    conn.request("GET", "/healthz")
    response = conn.getresponse()
    response.read()
    return response.status == 200


def test_a_body_over_the_limit_is_answered_413_with_connection_close(gunicorn_server: Server):
    conn = _connection(gunicorn_server)

    conn.request("POST", "/api/v1/invoke", body=_oversized_body(), headers=_headers(gunicorn_server))
    response = conn.getresponse()
    envelope = json.loads(response.read())

    assert response.status == 413
    assert response.getheader("Connection") == "close"
    assert envelope["kind"] == "invalid_args" and "larger than this server accepts" in envelope["message"]
    # The client opens a new connection for its next request instead of finding a dead one.
    assert _next_request_works(conn)
    conn.close()


def test_a_chunked_body_is_read_like_any_other(gunicorn_server: Server):
    server = gunicorn_server
    token = server.session_token()
    conn = _connection(server)

    conn.request(
        "POST",
        "/api/v1/invoke",
        body=_in_chunks(_get_order_body("chunked"), size=20),
        headers=_headers(server, **{"X-ToolHub-Session": token}),
        encode_chunked=True,
    )
    response = conn.getresponse()
    envelope = json.loads(response.read())

    assert response.status == 200, envelope
    assert envelope["status"] == "ok" and envelope["call_id"] == "c1"
    assert envelope["data"]["order_id"] == "ORD-000001"
    assert _next_request_works(conn)
    conn.close()


def test_a_chunked_body_over_the_limit_is_answered_413_with_connection_close(gunicorn_server: Server):
    conn = _connection(gunicorn_server)

    conn.request(
        "POST",
        "/api/v1/invoke",
        body=_in_chunks(_oversized_body()),
        headers=_headers(gunicorn_server),
        encode_chunked=True,
    )
    response = conn.getresponse()
    envelope = json.loads(response.read())

    assert response.status == 413 and envelope["kind"] == "invalid_args"
    assert response.getheader("Connection") == "close"
    assert _next_request_works(conn)
    conn.close()


def test_a_body_refused_before_it_is_parsed_leaves_the_connection_usable(gunicorn_server: Server):
    conn = _connection(gunicorn_server)
    body = json.dumps({"task_id": "t", "padding": "x" * (SERVER_MAX_BODY_BYTES // 4)}).encode()

    conn.request("POST", "/api/v1/invoke", body=body, headers={"Authorization": "Bearer thk_wrong_key"})
    response = conn.getresponse()
    response.read()

    assert response.status == 401 and response.getheader("Connection") == "keep-alive"
    assert _next_request_works(conn)
    conn.close()
