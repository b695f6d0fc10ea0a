"""Published, granted versions calling the tools of acme's shipping MCP server (its upstream
row: the `shipping_upstream` fixture or UpstreamFactory(shipping=True)): the setting of the
mcp executor's tests."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from apps.catalog.models import Tool, ToolVersion
from apps.tenancy.models import Grant

PARAMETERS = {
    "type": "object",
    "properties": {"shipment_id": {"type": "string", "description": "The shipment."}},
    "required": ["shipment_id"],
    "additionalProperties": False,
}


def mcp_tool(
    agent: Any, name: str, *, side_effect: str = "readonly", timeout_s: float = 5.0, **config: Any
) -> None:
    """A published, granted version calling the upstream's tool `name`, `config` added to its
    executor config."""
    tool = Tool.objects.create(name=name, tenant=agent.tenant)
    version = ToolVersion.objects.create(
        tool=tool, number=1, description=f"Calls the shipping server's {name}. Not for anything else.",
        parameters=PARAMETERS if name != "list_carriers" else {"type": "object", "properties": {}},
        side_effect=side_effect, executor="mcp", timeout_s=timeout_s,
        executor_config={"upstream": "shipping", "tool": name, **config},
    )
    version.full_clean()
    version.status, version.published_at = "published", timezone.now()
    version.save()
    Grant.objects.create(tenant=agent.tenant, agent=agent, tool=tool)
