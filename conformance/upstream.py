"""The loopback upstream: a real HTTP server on 127.0.0.1 that checks every request it
receives against an OpenAPI document and answers a minimal JSON object, so the call
completes and the next one can be made.

`make conformance` runs it on a port the OS chooses and keeps every Check. A person runs it
in a second shell as the upstream of tools imported from a real document (README "Govern an
existing API"), and reads one line per request:

    .venv/bin/python -m conformance.upstream ../shared/realworld/openapi/stripe-spec3.yaml --port 8421
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NoReturn

from .documents import load_document, server_path
from .validation import DocumentValidator, RawRequest

ANSWER = json.dumps({"id": "conformance"}).encode()
# Away from `make run`'s 8000 (TOOLHUB_PORT) and 8001 (the demo MCP server, the port after it).
DEFAULT_PORT = 8421
PORT_VARIABLE = "TOOLHUB_LOOPBACK_PORT"
BODY_CHARS = 300  # a printed body is cut here: the line is read, not parsed

# Told each request as received and what the document says is wrong with it.
Listener = Callable[[RawRequest, tuple[str, ...]], None]


@dataclass(frozen=True)
class Check:
    """One request received, and what the document says is wrong with it (nothing: valid)."""

    method: str
    target: str
    errors: tuple[str, ...]


class ValidatingUpstream:
    """Validates with `validator` (set per document) and keeps every Check in `checks`, or,
    with a `listener`, tells it each request instead (a server left running keeps nothing)."""

    def __init__(self, server: ThreadingHTTPServer, listener: Listener | None = None) -> None:
        self.server = server
        self.validator: DocumentValidator | None = None
        self.checks: list[Check] = []
        self.listener = listener
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
            if self.listener is not None:
                self.listener(request, errors)
            else:
                self.checks.append(Check(method=request.method_name, target=request.target, errors=errors))


@contextmanager
def validating_upstream(port: int = 0, listener: Listener | None = None) -> Iterator[ValidatingUpstream]:
    """Listening on 127.0.0.1:`port` (0: a port the OS chooses) until the block ends."""
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

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    upstream = ValidatingUpstream(server, listener)
    thread = threading.Thread(target=server.serve_forever, name="conformance-upstream", daemon=True)
    thread.start()
    try:
        yield upstream
    finally:
        server.shutdown()
        server.server_close()


def request_line(request: RawRequest, errors: Sequence[str]) -> str:
    """`POST /v1/customers email=a%40b.c&metadata[order_id]=ORD-1 valid`: the method, the
    target (path and query) and the body as received, then `valid` or `invalid:` and the
    validator's messages."""
    body = _printable(request.data.decode("utf-8", errors="backslashreplace"))
    if len(body) > BODY_CHARS:
        body = body[:BODY_CHARS] + "…"
    verdict = "valid" if not errors else "invalid: " + " | ".join(errors)
    return " ".join(part for part in (request.method_name, _printable(request.target), body, verdict) if part)


def _printable(text: str) -> str:
    """One line whatever was sent: a newline or another control character as its escape."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.upstream",
        description="A loopback upstream for tools imported from an OpenAPI document: it checks every "
                    "request against the document, prints one line per request, and answers "
                    '200 {"id": "conformance"}. Ctrl-C stops it.')
    parser.add_argument("document", type=Path, help="The OpenAPI document (JSON or YAML).")
    parser.add_argument("--port", type=int, default=int(os.environ.get(PORT_VARIABLE) or DEFAULT_PORT),
                        help=f"The port on 127.0.0.1 (default: ${PORT_VARIABLE}, else {DEFAULT_PORT}; "
                             "0: one the OS chooses).")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    options = arguments(argv)
    try:
        content = load_document(options.document)
    except (OSError, ValueError) as error:
        print(f"Cannot read {options.document}: {getattr(error, 'strerror', None) or error}", file=sys.stderr)
        return 2
    base_path = server_path(content)
    validator = DocumentValidator(content, base_path=base_path)

    def stop(signum: int, frame: Any) -> NoReturn:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)  # `kill` stops it as cleanly as Ctrl-C
    # Ctrl-C even when started in the background of a script, which ignores SIGINT for it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with ExitStack() as running:
        try:
            upstream = running.enter_context(
                validating_upstream(options.port, lambda r, e: print(request_line(r, e), flush=True)))
        except OSError as error:
            print(f"Cannot listen on 127.0.0.1:{options.port}: {error.strerror} "
                  f"(another port: --port or ${PORT_VARIABLE}).", file=sys.stderr)
            return 1
        upstream.validator = validator
        print(f"Checking requests against {options.document.name} on {upstream.url} "
              f"(the tools' base URL: {upstream.url}{base_path}). Ctrl-C stops it.", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    print("Stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
