"""Pure: does this call need an operator's approval before it runs, and why?"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.gateway.contracts import PolicySpec, VersionSpec


def approval_reason(arguments: Mapping[str, Any], version: VersionSpec, policy: PolicySpec) -> str | None:
    """The reason an operator must approve this call first, or None when it may run now.

    The version declares `{"always": true}` or `{"field": "amount_cents", "above": 10000}`;
    a tenant policy with `requires_approval` gates every write of the tool.
    """
    rule = version.approval
    if rule.get("always"):
        return f"{version.tool_name} always needs an operator's approval."
    field = rule.get("field")
    if field is not None:
        value = arguments.get(field)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > rule["above"]:
            return f"{field} is {value}, above {rule['above']}: an operator must approve it."
    if policy.requires_approval and version.is_write:
        return f"This tenant's policy requires an operator's approval for {version.tool_name}."
    return None


def approval_expires_s(version: VersionSpec, default_s: int) -> int:
    return int(version.approval.get("expires_s", default_s))
