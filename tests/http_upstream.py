"""A real HTTP upstream on loopback for executor tests: it records every request as it
arrived (raw target, headers, body) and answers what the test scripts."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit


@dataclass(frozen=True)
class Received:
    method: str
    target: str  # the request target as sent, percent-encoding untouched
    headers: dict[str, str]
    body: bytes
    peer: tuple[str, int] = ("", 0)  # the client's address: one per connection

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> list[tuple[str, str]]:
        return parse_qsl(urlsplit(self.target).query, keep_blank_values=True)

    @property
    def segments(self) -> list[str]:
        """The path's segments, each decoded on its own."""
        return [unquote(part) for part in self.path.split("/")[1:]]

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: Any = None  # JSON-encoded unless bytes
    delay_s: float = 0.0
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


class Upstream:
    """`answer(received)` decides each reply; by default 200 with {"ok": true}. With
    `keep_alive`, it speaks HTTP/1.1 and keeps each connection open for the next request."""

    def __init__(self, *, keep_alive: bool = False) -> None:
        self.received: list[Received] = []
        self.answer: Callable[[Received], Answer] = lambda received: Answer(body={"ok": True})
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                received = Received(
                    method=self.command,
                    target=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                    peer=self.client_address,
                )
                upstream.received.append(received)
                answer = upstream.answer(received)
                time.sleep(answer.delay_s)
                raw = answer.body if isinstance(answer.body, bytes) else json.dumps(answer.body).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(raw)

            do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

            def log_message(self, format: str, *args: Any) -> None:  # quiet in test output
                pass

        self._server, self.url = serving(Handler)

    @property
    def last(self) -> Received:
        return self.received[-1]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def serving(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, str]:
    """`handler` served on a free port of 127.0.0.1 by a thread, and its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    # shutdown() waits for the loop to look at its flag, by default every 0.5 s: a quarter of
    # a second lost per test that closes one.
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@contextmanager
def http_upstream(*, keep_alive: bool = False) -> Iterator[Upstream]:
    upstream = Upstream(keep_alive=keep_alive)
    try:
        yield upstream
    finally:
        upstream.close()
