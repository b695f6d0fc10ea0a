"""How executors reach a stdio MCP server: through the MCP bridge (apps/bridge), which runs
the launcher's process and serves it over Streamable HTTP on loopback.

The bridge's address for one process says whose it is, so that each tenant (and, with a
per-user credential, each end user) has processes of its own:

    {TOOLHUB_MCP_BRIDGE_URL}/upstreams/{upstream id}/{tenant id | "platform"}/{subject key | "-"}/mcp

Requests carry `Authorization: Bearer <bridge token>` (derived from SECRET_KEY: only ToolHub's
own processes have it) and, when the upstream has a credential, its value in `Toolhub-Credential`;
the bridge puts it in the environment variable the credential names. The value travels as a
header so that the executors' redaction (apps/gateway/executors/endpoint.py), which hides every
header value sent from what the model reads, hides it as it hides any other credential.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass

from django.conf import settings

CREDENTIAL_HEADER = "Toolhub-Credential"
PLATFORM_SEGMENT = "platform"
NO_SUBJECT_SEGMENT = "-"
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


def bridge_headers(*, credential_value: str | None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {bridge_token()}"}
    if credential_value is not None:
        headers[CREDENTIAL_HEADER] = credential_value
    return headers


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
