"""What the modules of `/mcp` share: a JSON-RPC error answer, and a result that is already in
its revision's wire shape (an extension's, which the SDK's per-version surfaces do not know)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from django.http import JsonResponse
from pydantic import BaseModel

from apps.common.metrics import refusal_observed


class McpError(Exception):
    """A JSON-RPC error answer, with the HTTP status it goes out with."""

    def __init__(self, code: int, message: str, *, status: int = 200, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.status, self.data = code, message, status, data


class Shaped(BaseModel):
    """A result already shaped for its revision's wire: sent as it is (the tasks methods and a
    `tools/call` answered with a task, which the SDK's surfaces cannot shape)."""

    wire: dict[str, Any]


def error_response(
    rpc_id: types.RequestId | None, error: McpError, headers: dict[str, str] | None = None
) -> JsonResponse:
    body = types.JSONRPCError(
        jsonrpc="2.0",
        id=rpc_id,
        error=types.ErrorData(code=error.code, message=error.message, data=error.data),
    )
    # JSON-RPC keeps "id": null for an error that cannot name its request.
    wire = {**body.model_dump(by_alias=True, exclude_none=True), "id": rpc_id}
    if error.status >= 400:
        refusal_observed(status=error.status, kind=_refusal_kind(error))
    return JsonResponse(wire, status=error.status, headers=headers)


_REFUSAL_KINDS = {401: "forbidden", 403: "forbidden", 404: "not_found", 500: "internal", 503: "unavailable"}


def _refusal_kind(error: McpError) -> str:
    """The envelope kind the REST API answers the same refusal with (toolhub_refusals_total)."""
    if error.code == types.PARSE_ERROR:
        return "invalid_json"
    return _REFUSAL_KINDS.get(error.status, "invalid_args")
