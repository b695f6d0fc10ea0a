"""The `mcp` kind: a call becomes one `tools/call` to a tool of an MCP server upstream."""

from __future__ import annotations

from ..registry import Executor, register
from .config import CONFIG_SCHEMA, config_problems
from .executor import reconcile_mcp, run_mcp

EXECUTOR = register(
    Executor(
        kind="mcp",
        label="MCP",
        run=run_mcp,
        reconcile=reconcile_mcp,
        config_schema=CONFIG_SCHEMA,
        config_problems=config_problems,
        # An mcp write is asked about through its upstream's status tool, which needs the key
        # sent in the write; whether the upstream names a status tool is the upstream's page.
        reconcile_key="idempotency_argument",
        reconcile_how='an "idempotency_argument" in executor_config (the tool\'s argument that takes '
                      "the idempotency key) and a status tool on its upstream",
    )
)
