"""The demo shipping MCP server (apps/demo_shop/shipping) as `make run` starts it: a real
subprocess on a free loopback port, with its state in a file of the test's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.mcp_upstream import free_port

ROOT = Path(__file__).resolve().parent.parent
KEY = "shipping-test-key-4d2a"


@dataclass(frozen=True)
class ShippingServer:
    port: int
    key: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@contextmanager
def shipping_server(state: Path, *, port: int | None = None, key: str = KEY) -> Iterator[ShippingServer]:
    """The server until the block ends (SIGTERM, then SIGKILL after 10 s)."""
    port = port or free_port()
    env = {**os.environ, "DEMO_SHIPPING_API_KEY": key}
    process = subprocess.Popen(
        [sys.executable, "-m", "apps.demo_shop.shipping", "--port", str(port), "--state", str(state)],
        cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the shipping server exited: {process.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.1)
        yield ShippingServer(port=port, key=key)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
