"""`make profile`'s recordings: gunicorn under each load of the targets, sampled by py-spy.

Each load runs alone for FLAME_SECONDS with wrk (8 connections), after the warm-up of every
one, while py-spy records every gunicorn worker (bench/flame.py). The raw recordings are kept
in var/ (`var/flame-<load>.txt`, folded stacks that flamegraph.pl or speedscope draw); the
report prints their summaries.
"""

from __future__ import annotations

from dataclasses import replace

from .calls import IMPORTED_CALL, IMPORTED_PARAMS, MCP_HEADERS, TOOLHUB_OK, Access, mcp_session
from .config import FLAME_SECONDS, WARM_UP_SECONDS, say
from .flame import recording, summary
from .load import ROOT, Server
from .mcp import TRACK_PARAMS
from .over_http import Target, take_turns

FLAME_SLOT = 4  # orders to cancel: the write comparison's slot, which make profile does not use


def flame_loads(server: Server, access: Access) -> list[str]:
    """The summaries of a py-spy recording of gunicorn under each load, in the report's words."""
    agent = {**MCP_HEADERS, **access.search, "Mcp-Session-Id": mcp_session(f"{server.base_url}/mcp",
                                                                         access.search)}
    loads = [
        Target("search", "REST invoke, search_orders (python tool, readonly)", "/api/v1/invoke",
               access.search, kind="search"),
        Target("imported", "REST invoke, list_order_refunds (http tool, readonly)", "/api/v1/invoke",
               access.search, kind="call", body=IMPORTED_CALL),
        Target("mcp_imported", "/mcp tools/call, list_order_refunds", "/mcp", agent, kind="mcp",
               body=IMPORTED_PARAMS, expect=TOOLHUB_OK),
        Target("federated", "/mcp tools/call, track_shipment (federated MCP tool)", "/mcp", agent,
               kind="mcp", body=TRACK_PARAMS, expect=TOOLHUB_OK),
        Target("cancel", "REST invoke, cancel_order (write: intent + commit)", "/api/v1/invoke",
               access.cancel, kind="cancel", slot=FLAME_SLOT),
    ]
    say("Warm-up before the recordings:")
    take_turns(server, [replace(t, slot=FLAME_SLOT + 1) if t.slot else t for t in loads],
               seconds=WARM_UP_SECONDS, rounds=1)
    out = ["", f"py-spy: where gunicorn's time goes under each load ({FLAME_SECONDS} s each, wrk -c8, "
           "raw recordings in var/flame-*.txt)"]
    for load in loads:
        raw = ROOT / "var" / f"flame-{load.key}.txt"
        say(f"Recording {load.name}…")
        with recording(server.process_group, raw):
            take_turns(server, [load], seconds=FLAME_SECONDS, rounds=1)
        out += ["", load.name, *summary(raw)]
    return out
