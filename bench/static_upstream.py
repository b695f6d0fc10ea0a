"""A trivial upstream for the http tool loads: one fixed JSON answer, served by a process of
its own whose CPU the bench does not count as ToolHub's.

    python -m bench.static_upstream --port 8768 --path /orders/ORD-000001/refunds --body FILE

HTTP/1.1 with keep-alive, GET only, no parsing beyond the request line: it answers tens of
thousands of requests a second here, so a load through ToolHub measures ToolHub. Any other
path answers 404.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path


def _answer(status: str, body: bytes) -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: keep-alive\r\n\r\n").encode() + body


class _Connection(asyncio.Protocol):
    def __init__(self, answers: dict[bytes, bytes], missing: bytes) -> None:
        self._answers = answers
        self._missing = missing
        self._buffer = b""
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        assert self._transport is not None
        self._buffer += data
        # Requests without a body (GET) end at the blank line; pipelined ones are answered in order.
        while (end := self._buffer.find(b"\r\n\r\n")) >= 0:
            request_line = self._buffer[: self._buffer.find(b"\r\n")]
            self._buffer = self._buffer[end + 4:]
            parts = request_line.split(b" ")
            path = parts[1] if len(parts) == 3 and parts[0] == b"GET" else b""
            self._transport.write(self._answers.get(path, self._missing))


async def _serve(port: int, answers: dict[bytes, bytes]) -> None:
    missing = _answer("404 Not Found", b'{"error": "not found"}')
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Connection(answers, missing), "127.0.0.1", port)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with server:
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", required=True, help="the one path answered 200")
    parser.add_argument("--body", type=Path, required=True, help="a file: the JSON answered")
    args = parser.parse_args()
    body = args.body.read_bytes()
    answers = {args.path.encode(): _answer("200 OK", body), b"/healthz": _answer("200 OK", b"{}")}
    asyncio.run(_serve(args.port, answers))


if __name__ == "__main__":
    main()
