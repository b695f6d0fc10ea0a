"""A loopback upstream that answers more than anyone should read: every answer is a JSON
document of `size` bytes, streamed as fast as loopback takes it. Plain requests get
`{"data": "xxx…"}`; JSON-RPC requests are answered as a minimal MCP server over Streamable
HTTP would (`initialize`, `tools/list`; `tools/call` gets the huge text content), all as
`application/json`. It counts the bytes of answer bodies it managed to send. With
`gzip=True`, plain requests get the document gzip-compressed (a few hundred kilobytes that
inflate to `size`), as a compression bomb would."""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.http_upstream import serving

CHUNK = b"x" * (1 << 20)


def _gzipped(size: int, head: bytes, tail: bytes) -> bytes:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts, filler = [compressor.compress(head)], size - len(head) - len(tail)
    while filler > 0:
        parts.append(compressor.compress(CHUNK[:filler]))
        filler -= len(CHUNK)
    return b"".join([*parts, compressor.compress(tail), compressor.flush()])


class HugeUpstream:
    def __init__(self, size: int, *, gzip: bool = False) -> None:
        self.size = size
        self.sent = 0
        self.gzipped = _gzipped(size, b'{"data": "', b'"}') if gzip else b""
        self._lock = threading.Lock()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # no stream of server messages
                self._small(405, b"")

            def do_DELETE(self) -> None:
                self._small(200, b"")

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    message = json.loads(body)
                except ValueError:
                    message = {}
                if (not isinstance(message, dict) or "jsonrpc" not in message) and upstream.gzipped:
                    self._compressed()
                elif not isinstance(message, dict) or "jsonrpc" not in message:
                    self._huge(b'{"data": "', b'"}')
                elif "id" not in message:
                    self._small(202, b"")
                elif message.get("method") == "initialize":
                    self._rpc(message, {
                        "protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": {"tools": {}}, "serverInfo": {"name": "huge", "version": "1"},
                    })
                elif message.get("method") == "tools/list":
                    self._rpc(message, {"tools": [{"name": "dump", "inputSchema": {"type": "object"}}]})
                else:
                    head = json.dumps({"jsonrpc": "2.0", "id": message["id"]})[:-1]
                    self._huge(f'{head}, "result": {{"content": [{{"type": "text", "text": "'.encode(),
                               b'"}]}}')

            do_PUT = do_PATCH = do_POST

            def _small(self, status: int, raw: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(raw)))
                self.send_header("Mcp-Session-Id", "huge-session")
                self.end_headers()
                self.wfile.write(raw)

            def _rpc(self, message: dict[str, Any], result: dict[str, Any]) -> None:
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
                self._small(200, json.dumps(answer).encode())

            def _huge(self, head: bytes, tail: bytes) -> None:
                filler = upstream.size - len(head) - len(tail)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(upstream.size))
                self.send_header("Mcp-Session-Id", "huge-session")
                self.end_headers()
                try:
                    self._send(head)
                    while filler > 0:
                        self._send(CHUNK[:filler])
                        filler -= len(CHUNK)
                    self._send(tail)
                except OSError:  # the client stopped reading and closed the connection
                    self.close_connection = True

            def _compressed(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(upstream.gzipped)))
                self.end_headers()
                try:
                    self._send(upstream.gzipped)
                except OSError:
                    self.close_connection = True

            def _send(self, raw: bytes) -> None:
                self.wfile.write(raw)
                with upstream._lock:
                    upstream.sent += len(raw)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server, self.url = serving(Handler)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def huge_upstream(size: int, *, gzip: bool = False) -> Iterator[HugeUpstream]:
    upstream = HugeUpstream(size, gzip=gzip)
    try:
        yield upstream
    finally:
        upstream.close()
