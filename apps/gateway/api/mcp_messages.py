"""Reading a POST to `/mcp`: the Origin it comes from, and its one JSON-RPC message."""

from __future__ import annotations

from urllib.parse import urlsplit

import mcp_types as types
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest
from django.http.request import validate_host
from pydantic import ValidationError

from apps.common import jsontext
from apps.common.parsers import MAX_BODY_DEPTH, nested_deeper_than
from apps.common.request_body import BodyCut, BodyReadTimeout, body_refusal_error

from .mcp_wire import McpError


def origin_allowed(request: HttpRequest) -> bool:
    """No Origin, or one of the allowed hosts: against DNS rebinding."""
    origin = request.headers.get("Origin")
    return not origin or validate_host(urlsplit(origin).hostname or "", settings.ALLOWED_HOSTS)


def message(request: HttpRequest) -> types.JSONRPCMessage:
    """The body's JSON-RPC message; McpError for a body that is none (or a batch)."""
    try:
        raw = jsontext.loads(request.body)
    except (RequestDataTooBig, BodyReadTimeout, BodyCut) as refused:
        error = body_refusal_error(refused)
        raise McpError(types.INVALID_REQUEST, error.message, status=error.http_status) from None
    except ValueError:
        raise McpError(types.PARSE_ERROR, "The body is not JSON.", status=400) from None
    except RecursionError:
        raise _too_deep() from None
    if nested_deeper_than(raw, MAX_BODY_DEPTH):
        raise _too_deep()
    if isinstance(raw, list):
        raise McpError(
            types.INVALID_REQUEST,
            "Send one JSON-RPC message per POST; batches are not supported.",
            status=400,
        )
    try:
        read = types.jsonrpc_message_adapter.validate_python(raw, by_name=False)
    except ValidationError:
        raise McpError(types.INVALID_REQUEST, "The body is not a JSON-RPC 2.0 message.", status=400) from None
    rpc_id = getattr(read, "id", None)
    if isinstance(rpc_id, str) and (hazard := jsontext.text_hazard(rpc_id)):
        # The id becomes the call id, stored in the ledger and the log, where neither NUL nor
        # a lone surrogate can go.
        raise McpError(types.INVALID_REQUEST, f"The JSON-RPC id {hazard.problem}.", status=400)
    return read


def _too_deep() -> McpError:
    return McpError(
        types.INVALID_REQUEST, f"The body is nested deeper than {MAX_BODY_DEPTH} levels.", status=400
    )
