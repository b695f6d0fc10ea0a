"""apps.bridge runs stdio MCP servers, each process confined by bubblewrap, and serves each
over Streamable HTTP on loopback to the `mcp` executor: `manage.py mcp_bridge`, one per
machine. It needs no database: what to run comes with each request (apps/upstreams/bridge.py).

- sandbox.py: what a process may see (bubblewrap's arguments) and its resource limits; pure;
- limits.py: the control groups that bound a process's processes and memory, and the limits
  set in the child before it runs;
- stdio.py: a child's pipes as the SDK session's streams, read with bounds, stderr to the log;
- processes.py: one process per key, started on use, stopped when idle, backoff after dying;
- server.py: the ASGI app (token, path, launch spec, then the SDK's session manager).

May import: upstreams, common (layers contract, pyproject.toml).
"""

from django.apps import AppConfig


class BridgeConfig(AppConfig):
    name = "apps.bridge"
    label = "bridge"
    verbose_name = "MCP bridge"
