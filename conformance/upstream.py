"""The loopback upstream: a real HTTP server on 127.0.0.1 (a port the OS chooses) that
checks every request it receives against the document being run and answers a minimal
JSON object, so the call completes and the next one can be made."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .validation import DocumentValidator, RawRequest

ANSWER = json.dumps({"id": "conformance"}).encode()


@dataclass(frozen=True)
class Check:
    """One request received, and what the document says is wrong with it (nothing: valid)."""

    method: str
    target: str
    errors: tuple[str, ...]


class ValidatingUpstream:
    """Validates with `validator` (set per document) and keeps every Check in `checks`."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server
        self.validator: DocumentValidator | None = None
        self.checks: list[Check] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def take(self) -> list[Check]:
        """The checks since the last take."""
        with self._lock:
            taken, self.checks = self.checks, []
        return taken

    def receive(self, request: RawRequest) -> None:
        if self.validator is None:
            errors: tuple[str, ...] = ("No document is being run.",)
        else:
            try:
                errors = tuple(self.validator.errors(request))
            except Exception as error:  # a validator crash is a finding, not the end of the run
                errors = (f"The validator failed: {type(error).__name__}: {error}",)
        with self._lock:
            self.checks.append(Check(method=request.method_name, target=request.target, errors=errors))


@contextmanager
def validating_upstream() -> Iterator[ValidatingUpstream]:
    upstream: ValidatingUpstream

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            upstream.receive(RawRequest(self.command, self.path, headers, body))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(ANSWER)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(ANSWER)

        do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_TRACE = _handle

        def log_message(self, format: str, *args: Any) -> None:  # the run prints its own report
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    upstream = ValidatingUpstream(server)
    thread = threading.Thread(target=server.serve_forever, name="conformance-upstream", daemon=True)
    thread.start()
    try:
        yield upstream
    finally:
        server.shutdown()
        server.server_close()
