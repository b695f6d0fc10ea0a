"""The invoke operations' hot path, without DRF's request, negotiation and serializers.

A well-formed request is served here: a POST of a JSON object with an agent key, whose
envelope fields have the types the serializers take. The key is checked as DRF would check
it (AgentKeyAuthentication), the body parsed by the API's own JSON parser, the fields read
by plain code, and the answer rendered byte for byte as DRF's JSONRenderer renders it.
Everything else (no key or a bad one, a body that is not JSON, a field of another type or
out of its bounds, an Accept header that asks for another rendering) is `Irregular`: the
DRF view (views.py) serves it from the start, with its serializers and its error answers.
The plain reading accepts only what the serializers accept, and reads it as they do
(strings stripped, defaults filled), so what an agent sees does not depend on the path.

Measured by bench/cpu_in_process.py: DRF's dispatch and the serializers cost about a
quarter of the CPU a governed call adds to the tool's own.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from rest_framework.exceptions import AuthenticationFailed, ParseError
from rest_framework.utils.encoders import JSONEncoder

from apps.common.api import error_answer
from apps.common.errors import ToolHubError
from apps.common.jsontext import text_hazard
from apps.common.parsers import JSONParser
from apps.gateway.contracts import InvokeOptions, ToolCall
from apps.tenancy.authentication import AgentPrincipal, StaleKey, authenticated_agent
from apps.tenancy.sessions import SESSION_HEADER

from .serializers import MAX_CALLS_PER_BATCH

# What the invoke serializers bound (serializers.py); a value past one goes the DRF way.
_NAME_CHARS = 200
_SCOPE_CHARS = 64
_MAX_WAIT_S = 60
_BUDGET_CHARS = (500, 1_000_000)
# The Accept values for which DRF's negotiation picks its JSON renderer without options.
_JSON_ACCEPTED = frozenset({"application/json", "application/*", "*/*"})

Handler = Callable[[AgentPrincipal, str | None, dict[str, Any]], tuple[Any, int]]


class Irregular(Exception):
    """Not a request the hot path reads: the DRF view answers it."""


def served(request: HttpRequest, handle: Handler, *, allow: str) -> HttpResponse | None:
    """The answer to a well-formed POST, or None for a request the DRF view must serve.

    `handle(principal, session token, body)` reads the body's fields (raising Irregular
    for any it does not take) and returns the answer's data and HTTP status. An error once
    the request is read (the database down, a bug) is answered as DRF's exception handler
    answers it.
    """
    if not _plain_json_post(request):
        return None
    try:
        principal = _agent(request)
        body = _json_object(request)
        data, status = handle(principal, request.META.get(SESSION_HEADER), body)
    except (Irregular, StaleKey):
        return None
    except Exception as exc:  # noqa: BLE001 - every error has its answer, as in DRF's handler
        answer = error_answer(exc)
        return _rendered(answer.envelope, answer.status, {**answer.headers, "Allow": allow})
    return _rendered(data, status, {"Allow": allow})


def _plain_json_post(request: HttpRequest) -> bool:
    if request.method != "POST" or request.content_type != "application/json":
        return False
    if "format" in request.META.get("QUERY_STRING", ""):
        return False  # DRF's ?format= picks a renderer, or answers 404
    accept = request.META.get("HTTP_ACCEPT")
    if accept is None:
        return True
    # Parameters (q, indent) change what DRF's negotiation picks or how it renders.
    return ";" not in accept and any(part.strip().lower() in _JSON_ACCEPTED for part in accept.split(","))


def _agent(request: HttpRequest) -> AgentPrincipal:
    """The agent, its key taken on trust when this process knows it: the invoke path checks
    it with the task's counters, before it writes anything (StaleKey: the DRF way)."""
    try:
        principal = authenticated_agent(request.META, on_trust=True)
    except AuthenticationFailed:
        raise Irregular from None
    if principal is None:
        raise Irregular
    return principal


def _json_object(request: HttpRequest) -> dict[str, Any]:
    """The body as the API's JSON parser reads it; a refused body (too large, too slow, cut)
    raises what DRF's reading of it raises."""
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if not declared.isdigit() or int(declared) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        # A body declared too large is refused unread and its connection closed while the
        # client may still be sending it: the DRF way, so that the client has as
        # long to finish and read the 413 (tests/ops/test_http_edges.py).
        raise Irregular
    body = request.body
    encoding = request.encoding or settings.DEFAULT_CHARSET
    try:
        data = JSONParser().parse(io.BytesIO(body), parser_context={"encoding": encoding})
    except (ParseError, ToolHubError):
        raise Irregular from None
    if not isinstance(data, dict):
        raise Irregular
    return data


def _rendered(data: Any, status: int, headers: dict[str, str]) -> HttpResponse:
    """`data` as DRF's JSONRenderer renders it (UNICODE_JSON, COMPACT_JSON, STRICT_JSON)."""
    text = json.dumps(data, cls=JSONEncoder, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return HttpResponse(text.encode(), status=status, content_type="application/json", headers=headers)


def text(data: Mapping[str, Any], name: str, *, max_chars: int, blank: bool = False) -> str:
    """A CharField's value: a string, stripped, within `max_chars`, without NUL or a lone
    surrogate; absent it is "" where blank is allowed (the serializers' default)."""
    if name not in data:
        if blank:
            return ""
        raise Irregular
    value = data[name]
    if not isinstance(value, str):
        raise Irregular  # DRF turns numbers into strings; that rare case goes its way
    value = value.strip()
    if (not value and not blank) or len(value) > max_chars or text_hazard(value) is not None:
        raise Irregular
    return value


def options(data: Mapping[str, Any], *, wait_s: float = 0) -> InvokeOptions:
    """What a request says about all its calls (TaskScopeSerializer, _CommonInput)."""
    dry_run = data.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise Irregular
    return InvokeOptions(
        task_id=text(data, "task_id", max_chars=_NAME_CHARS),
        toolset=text(data, "toolset", max_chars=_SCOPE_CHARS, blank=True) or None,
        phase=text(data, "phase", max_chars=_SCOPE_CHARS, blank=True) or None,
        dry_run=dry_run,
        wait_s=wait_s,
    )


def wait_s(data: Mapping[str, Any]) -> float:
    """InvokeInputSerializer.wait_s: a finite number of seconds from 0 to 60, 0 when absent."""
    if "wait_s" not in data:
        return 0
    value = data["wait_s"]
    # NaN and the infinities fail the comparison too.
    if type(value) not in (int, float) or not 0 <= value <= _MAX_WAIT_S:
        raise Irregular
    return float(value)


def call(data: Any) -> ToolCall:
    """One call (CallSerializer): its arguments as sent, "{}" when absent."""
    if not isinstance(data, dict):
        raise Irregular
    return ToolCall(
        call_id=text(data, "id", max_chars=_NAME_CHARS),
        name=text(data, "name", max_chars=_NAME_CHARS),
        arguments=data.get("arguments", "{}"),
    )


def calls(data: Mapping[str, Any]) -> list[ToolCall]:
    """A batch's calls (BatchInputSerializer.calls): 1 to 64, their ids unique."""
    listed = data.get("calls")
    if not isinstance(listed, list) or not 0 < len(listed) <= MAX_CALLS_PER_BATCH:
        raise Irregular
    read = [call(item) for item in listed]
    if len({c.call_id for c in read}) != len(read):
        raise Irregular
    return read


def budget_chars(data: Mapping[str, Any]) -> int | None:
    """BatchInputSerializer.budget_chars: null, absent, or an integer within its bounds."""
    value = data.get("budget_chars")
    if value is None:
        return None
    if type(value) is not int or not _BUDGET_CHARS[0] <= value <= _BUDGET_CHARS[1]:
        raise Irregular
    return value
