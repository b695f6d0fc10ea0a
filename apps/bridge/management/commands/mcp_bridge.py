"""`manage.py mcp_bridge [--host 127.0.0.1] [--port N]`: the MCP bridge of this machine
(apps/bridge), serving its stdio MCP servers to ToolHub over Streamable HTTP until SIGINT or
SIGTERM, which stop it and every process it started."""

from __future__ import annotations

import shutil
from typing import Any

import uvicorn
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.bridge.server import bridge_app
from apps.bridge.stdio import BWRAP

# Long enough for a call in flight to finish, short enough for a restart to stay quick.
GRACEFUL_SHUTDOWN_S = 10


class Command(BaseCommand):
    help = "Run the MCP bridge: stdio MCP servers, each under bubblewrap, served over Streamable HTTP."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1", help="Address to listen on (loopback by default).")
        parser.add_argument("--port", type=int, default=settings.TOOLHUB_MCP_BRIDGE_PORT,
                            help="Port to listen on (TOOLHUB_MCP_BRIDGE_PORT by default).")

    def handle(self, *args: Any, host: str, port: int, **options: Any) -> None:
        if shutil.which(BWRAP) is None:
            raise CommandError(f"{BWRAP} is missing: install bubblewrap (Debian package `bubblewrap`).")
        # uvicorn handles SIGINT and SIGTERM: it stops serving, and the app's lifespan stops
        # every process. Its logs go through Django's logging configuration.
        uvicorn.run(
            bridge_app(), host=host, port=port, lifespan="on", log_config=None,
            access_log=False, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        )
