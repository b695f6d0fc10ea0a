"""The python executor of `request_capability`: record the request, say what to tell the user."""

from __future__ import annotations

from typing import Any

from apps.gateway.executors.base import ExecutionRequest, tool_callable

from .builtin import REQUEST_CAPABILITY_CALLABLE
from .models import CapabilityRequest, CapabilityStatus
from .selectors import tenant_id_for_slug
from .services import SOURCE_REQUEST, capability_request_record


def _hint(row: CapabilityRequest) -> str:
    if row.status == CapabilityStatus.PLANNED:
        return "The operators already plan to add this. Tell the user it is not available yet."
    if row.status == CapabilityStatus.FULFILLED and row.fulfilled_by is not None:
        tool = row.fulfilled_by.name
        return (
            f"The operators say the tool {tool} now does this: use {tool} if it is in your tool list; "
            "otherwise tell the user it is not available to you."
        )
    if row.status == CapabilityStatus.DECLINED:
        return (
            f"The operators decided not to add this ({row.decline_reason}). Tell the user it cannot "
            "be done here."
        )
    return (
        "Recorded for the operators. Tell the user this cannot be done here yet and that the need "
        "was passed on; do not ask for the same capability again in this task."
    )


@tool_callable(REQUEST_CAPABILITY_CALLABLE)
def request_capability(request: ExecutionRequest) -> dict[str, Any]:
    arguments = request.arguments
    row = capability_request_record(
        tenant_id=tenant_id_for_slug(slug=request.tenant_slug),
        capability=arguments["capability"],
        sample={
            "source": SOURCE_REQUEST,
            "capability": arguments["capability"],
            "reason": arguments["reason"],
            "example_arguments": arguments.get("example_arguments"),
            "task_id": request.task_id,
            "call_id": request.call_id,
        },
    )
    return {
        "recorded": {"capability": row.name, "status": row.status, "times_requested": row.count},
        "hint": _hint(row),
    }
