"""How executors reach a stdio MCP server: through the MCP bridge (apps/bridge), which runs
the launcher's process and serves it over Streamable HTTP on loopback.

The bridge's address for one process says whose it is, so that each tenant (and, with a
per-user credential, each end user) has processes of its own:

    {TOOLHUB_MCP_BRIDGE_URL}/upstreams/{upstream id}/{tenant id | "platform"}/{subject key | "-"}/mcp

Requests carry `Authorization: Bearer <bridge token>` (derived from SECRET_KEY: only ToolHub's
own processes have it), what to run in `Toolhub-Launch` (the launcher's command, paths,
environment names and limits, and the upstream's arguments: `launch_spec`, as base64url JSON)
and, when the upstream has a credential, its value in `Toolhub-Credential`, which the bridge
puts in the environment variable the credential names. The bridge needs no database: what
runs is what the launcher row said when the call was made, and a changed launcher makes a new
process (the spec is part of what a process is kept under). The credential travels as a
header of its own so that the executors' redaction (apps/gateway/executors/endpoint.py), which
hides every header value sent from what the model reads, hides it as any other credential.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings

CREDENTIAL_HEADER = "Toolhub-Credential"
LAUNCH_HEADER = "Toolhub-Launch"
PLATFORM_SEGMENT = "platform"
NO_SUBJECT_SEGMENT = "-"
# What the bridge says when a request could not be served by the process (`error.data.reason`
# of its JSON-RPC error). NOT_RUNNING: there is no process to send it to (it could not be
# started, or it died and is started again after a backoff): HTTP 503, JSON-RPC code -32600
# (invalid request), nothing reached the server, and calling again after `retry_after_s` may
# work. PROCESS_STOPPED: the process ended while the request was in flight (JSON-RPC -32603):
# the server may have run it.
NOT_RUNNING = "process_not_running"
PROCESS_STOPPED = "process_stopped"
PATH_PATTERN = re.compile(
    r"^/upstreams/(?P<upstream>[0-9]+)/(?P<tenant>[0-9]+|platform)/(?P<subject>[0-9a-f]{32}|-)/mcp/?$"
)


def bridge_token() -> str:
    """The bearer token the bridge accepts: ToolHub's processes derive it from SECRET_KEY."""
    return hmac.new(settings.SECRET_KEY.encode(), b"toolhub-mcp-bridge", hashlib.sha256).hexdigest()


def subject_key(subject: str) -> str:
    """An end user's id as the bridge's path carries it: a digest, never the id itself."""
    return hashlib.sha256(subject.encode()).hexdigest()[:32]


def bridge_url(*, upstream_id: int, tenant_id: int | None, subject: str) -> str:
    """Where the process serving this upstream for this tenant (and end user: "" for none, or
    for a credential shared by all of the tenant's users) is reached."""
    tenant = PLATFORM_SEGMENT if tenant_id is None else str(tenant_id)
    person = subject_key(subject) if subject else NO_SUBJECT_SEGMENT
    return f"{settings.TOOLHUB_MCP_BRIDGE_URL.rstrip('/')}/upstreams/{upstream_id}/{tenant}/{person}/mcp"


def launch_spec(*, launcher: Any, args: list[str], env_name: str | None) -> dict[str, Any]:
    """What the bridge runs for an upstream: its launcher's (an McpLauncher) command and
    confinement, the upstream's arguments, and the variable its credential fills (or None)."""
    return {
        "launcher": launcher.name,
        "command": [*launcher.command, *args],
        "read_paths": list(launcher.read_paths),
        "write_paths": list(launcher.write_paths),
        "env_name": env_name,
        "network": launcher.network,
        "memory_mb": launcher.memory_mb,
        "cpu_s": launcher.cpu_s,
        "max_processes": launcher.max_processes,
        "max_open_files": launcher.max_open_files,
        "idle_stop_s": launcher.idle_stop_s,
    }


def bridge_headers(*, spec: dict[str, Any], credential_value: str | None) -> dict[str, str]:
    encoded = base64.urlsafe_b64encode(json.dumps(spec, sort_keys=True).encode()).decode()
    headers = {"Authorization": f"Bearer {bridge_token()}", LAUNCH_HEADER: encoded}
    if credential_value is not None:
        headers[CREDENTIAL_HEADER] = credential_value
    return headers


def spec_from_header(value: str) -> dict[str, Any]:
    """The launch spec a request carries; ValueError when it is not one."""
    spec = json.loads(base64.urlsafe_b64decode(value.encode()))
    if not isinstance(spec, dict) or not isinstance(spec.get("command"), list):
        raise ValueError("not a launch spec")
    return spec


@dataclass(frozen=True)
class ProcessAddress:
    """Whose process a bridge path names."""

    upstream_id: int
    tenant_id: int | None
    subject_key: str

    @classmethod
    def from_path(cls, path: str) -> ProcessAddress | None:
        match = PATH_PATTERN.match(path)
        if match is None:
            return None
        tenant = match["tenant"]
        return cls(
            upstream_id=int(match["upstream"]),
            tenant_id=None if tenant == PLATFORM_SEGMENT else int(tenant),
            subject_key="" if match["subject"] == NO_SUBJECT_SEGMENT else match["subject"],
        )
