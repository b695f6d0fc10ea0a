"""`python -m apps.demo_shop.shipping [--host H] [--port P] [--state FILE]`: the demo
shipping MCP server on http://H:P/mcp (uvicorn), until SIGINT or SIGTERM.

The key it expects is DEMO_SHIPPING_API_KEY (default: the demo's, as in ToolHub's settings);
its state goes to FILE, by default demo-shipping.json under TOOLHUB_VAR_DIR (default var/).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import uvicorn

from .server import ShippingServer
from .store import ShippingStore

DEFAULT_API_KEY = "demo-shipping-secret"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m apps.demo_shop.shipping",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on (default 127.0.0.1).")
    parser.add_argument("--port", type=int, default=int(os.environ.get("TOOLHUB_DEMO_MCP_PORT", "8001")),
                        help="Port (default TOOLHUB_DEMO_MCP_PORT, else 8001).")
    var_dir = Path(os.environ.get("TOOLHUB_VAR_DIR", "var"))
    parser.add_argument("--state", type=Path, default=var_dir / "demo-shipping.json",
                        help="The JSON file pickups and changed descriptions are kept in.")
    options = parser.parse_args()
    server = ShippingServer(ShippingStore(options.state))
    app = server.app(api_key=os.environ.get("DEMO_SHIPPING_API_KEY") or DEFAULT_API_KEY)
    uvicorn.run(app, host=options.host, port=options.port, log_level="warning",
                timeout_graceful_shutdown=2)


if __name__ == "__main__":
    main()
