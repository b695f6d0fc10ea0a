"""A shipping MCP server that speaks stdio, for the tests of stdio servers governed through the
MCP bridge (tests/e2e/test_stdio_parity.py). Built on the official SDK's MCPServer, like
tests/mcp_upstream.py's Streamable HTTP one, with the same three tools:

- `track_shipment` (readonly): where a shipment is;
- `schedule_pickup` (a write): books a pickup; the same idempotency key never books twice,
  it answers the first booking;
- `pickup_status` (readonly): the status tool ToolHub's reconciler asks, by idempotency key:
  `{"found": true, "result": <the booking>}` or `{"found": false}`.

    python tests/stdio_shipping_server.py --state DIR

Self-contained (no import from the repository): it runs in the bridge's sandbox, which reads
only this file, the venv and the launcher's paths; DIR, a write path of the launcher, holds
what the test and the server share:

- `bookings.json`: every idempotency key that arrived, in order, and what each booked;
- `hang`: while this file exists, a booking waits (at most a minute) after it is recorded,
  before answering: a write applied whose answer comes too late;
- `descriptions.json`: `{tool: description}` that `tools/list` serves instead of a tool's own,
  read at each listing: a server changing a tool after it was reviewed (drift);
- `broken`: while this file exists, the server exits, and exits again as it starts: a server
  that died and cannot run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import Tool, ToolAnnotations

# Before Python 3.12, pydantic builds the tools' output schemas only from typing_extensions' TypedDict.
from typing_extensions import TypedDict

BOOKINGS = "bookings.json"
HANG = "hang"
BROKEN = "broken"
DESCRIPTIONS = "descriptions.json"
HANG_AT_MOST_S = 60.0
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
PICKUP = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)


class Shipment(TypedDict):
    shipment_id: str
    status: str


class Pickup(TypedDict):
    pickup_id: str
    shipment_id: str


class ShippingServer(MCPServer):
    """The tools over the state directory; `tools/list` serves the descriptions file's overrides."""

    def __init__(self, state: Path) -> None:
        super().__init__("stdio-shipping", log_level="WARNING")
        self.state = state
        self.lock = threading.Lock()
        self.add_tool(self.track_shipment, name="track_shipment", annotations=READ_ONLY)
        self.add_tool(self.schedule_pickup, name="schedule_pickup", annotations=PICKUP)
        self.add_tool(self.pickup_status, name="pickup_status", annotations=READ_ONLY)

    async def list_tools(self) -> list[Tool]:
        overrides = self._read(DESCRIPTIONS, {})
        return [
            tool.model_copy(update={"description": overrides[tool.name]}) if tool.name in overrides else tool
            for tool in await super().list_tools()
        ]

    def track_shipment(self, shipment_id: str) -> Shipment:
        """Where a shipment is. Changes nothing."""
        return {"shipment_id": shipment_id, "status": "in transit"}

    def schedule_pickup(self, shipment_id: str, idempotency_key: str) -> Pickup:
        """Books a courier pickup of a shipment. A second call with the same idempotency key
        books nothing and answers the first booking."""
        with self.lock:
            bookings = self._read(BOOKINGS, {"arrived": [], "booked": {}})
            bookings["arrived"].append(idempotency_key)
            number = len(bookings["booked"]) + 1
            pickup = bookings["booked"].setdefault(
                idempotency_key, {"pickup_id": f"pu-{number}", "shipment_id": shipment_id}
            )
            self._write(BOOKINGS, bookings)
        deadline = time.monotonic() + HANG_AT_MOST_S
        while (self.state / HANG).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return pickup  # type: ignore[no-any-return]

    def pickup_status(self, idempotency_key: str) -> dict[str, Any]:
        """Whether the pickup booked with this idempotency key exists (ToolHub's status tool)."""
        with self.lock:
            booked = self._read(BOOKINGS, {"booked": {}})["booked"]
        if idempotency_key in booked:
            return {"found": True, "result": booked[idempotency_key]}
        return {"found": False}

    def _read(self, name: str, default: Any) -> Any:
        path = self.state / name
        return json.loads(path.read_text()) if path.exists() else default

    def _write(self, name: str, value: Any) -> None:
        written = self.state / f"{name}.tmp"
        written.write_text(json.dumps(value))
        written.replace(self.state / name)


def main() -> None:
    parser = argparse.ArgumentParser(description="The stdio shipping MCP server of ToolHub's tests.")
    parser.add_argument("--state", type=Path, required=True, help="The directory of its state files.")
    state = parser.parse_args().state
    threading.Thread(target=_exit_once_broken, args=(state,), daemon=True).start()
    ShippingServer(state).run("stdio")


def _exit_once_broken(state: Path) -> None:
    while not (state / BROKEN).exists():
        time.sleep(0.05)
    print(f"stdio-shipping: {state / BROKEN} exists; exiting.", file=sys.stderr, flush=True)
    os._exit(1)


if __name__ == "__main__":
    main()
