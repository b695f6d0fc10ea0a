"""The tools ToolHub itself offers every agent, by name.

Here, below both the catalog and the gateway, so that the gateway names its built-in tools
with these constants and the catalog refuses them as tool names: a catalog tool of such a
name would be shadowed by the built-in one and never called.
"""

from __future__ import annotations

# The way out every agent sees in every toolset and phase (principle 16).
REQUEST_CAPABILITY = "request_capability"

BUILTIN_TOOL_NAMES = frozenset({REQUEST_CAPABILITY})
