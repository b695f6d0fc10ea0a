"""OpenAPI pieces of the agent API that belong to tenancy: the agent-key scheme (the error
envelope every answer shares is apps/common/api_schema.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object


class AgentKeyScheme(OpenApiAuthenticationExtension):
    """Registered on import (see TenancyConfig.ready)."""

    target_class = "apps.tenancy.authentication.AgentKeyAuthentication"
    name = "agentKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        definition = build_bearer_security_scheme_object(
            header_name="Authorization", token_prefix="Bearer", bearer_format="thk_<prefix>_<secret>"
        )
        definition["description"] = (
            "An agent key, issued once by an operator (`manage.py issue_agent_key` or the admin)."
        )
        return definition
