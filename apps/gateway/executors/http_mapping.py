"""How an http version's arguments become a request, and its answer a result. Pure.

The version's executor config says where each argument goes (docs/http-tools.md): `{name}`
placeholders of the path (one percent-encoded segment each), query parameters (absent or
null ones omitted, arrays repeated), headers listed by name, and a JSON body of the rest or
of listed arguments. `response_pointer` selects the part of the answer that is the result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from apps.catalog.definitions import (
    BODYLESS_METHODS,
    DEFAULT_HTTP_METHOD,
    DEFAULT_IDEMPOTENCY_HEADER,
    PATH_PLACEHOLDER,
    STATUS_PATH_PLACEHOLDER,
    path_placeholders,
)
from apps.common.errors import ErrorDetail, InvalidArgsError

_SCALARS = (str, int, float, bool)


@dataclass(frozen=True)
class RequestParts:
    """One request as the mapping makes it; the base URL and credentials are added by the executor."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    headers: Mapping[str, str]
    json_body: Any = None  # None: no body


class ResponseShapeError(ValueError):
    """The answer has nothing where the version's response_pointer points."""


def wire_idempotency_key(key: str) -> str:
    """The key as sent upstream: HTTP headers carry ASCII only, so other characters (a task id
    in another script) are percent-encoded. Unambiguous: a literal '%' is already '%25' in the key."""
    return quote(key, safe="/%-._~:@!$&'()*+,;=")


def request_parts(
    config: Mapping[str, Any], arguments: Mapping[str, Any], *, idempotency_key: str | None
) -> RequestParts:
    """The request for one call. Raises InvalidArgsError for an argument that cannot be put
    where the config says (a path segment that is empty or not a single value, a header
    value that is not printable ASCII): nothing can be sent, and the model can fix it."""
    method = str(config.get("method", DEFAULT_HTTP_METHOD))
    template = str(config.get("path", ""))
    in_path = path_placeholders(template)
    path = PATH_PLACEHOLDER.sub(lambda m: _path_segment(m.group(1), arguments.get(m.group(1))), template)
    query_names: Sequence[str] = config.get("query") or ()
    header_args: Mapping[str, str] = config.get("headers") or {}
    headers = {header: _header_value(header, name, arguments[name])
               for header, name in header_args.items() if arguments.get(name) is not None}
    headers["Accept"] = "application/json"
    if idempotency_key:
        headers[str(config.get("idempotency_header", DEFAULT_IDEMPOTENCY_HEADER))] = wire_idempotency_key(
            idempotency_key
        )
    body = config.get("body", None if method in BODYLESS_METHODS else "rest")
    if body == "rest":
        used = {*in_path, *query_names, *header_args.values()}
        json_body: Any = {name: value for name, value in arguments.items() if name not in used}
    elif isinstance(body, list):
        json_body = {name: arguments[name] for name in body if name in arguments}
    else:
        json_body = None
    return RequestParts(
        method=method,
        path=path,
        query=tuple(_query_pairs(query_names, arguments)),
        headers=headers,
        json_body=json_body,
    )


def status_parts(config: Mapping[str, Any], *, idempotency_key: str) -> RequestParts:
    """The reconciliation request: a GET of `status_path` with the key in its placeholder, or,
    for a path without one, as the query parameter `idempotency_key`."""
    wire = wire_idempotency_key(idempotency_key)
    template = str(config["status_path"])
    placeholder = "{" + STATUS_PATH_PLACEHOLDER + "}"
    filled = placeholder in template
    return RequestParts(
        method="GET",
        path=template.replace(placeholder, quote(wire, safe="")),
        query=() if filled else (("idempotency_key", wire),),
        headers={
            "Accept": "application/json",
            str(config.get("idempotency_header", DEFAULT_IDEMPOTENCY_HEADER)): wire,
        },
    )


def selected_response(config: Mapping[str, Any], body: Any) -> Any:
    """The part of the answer `response_pointer` (RFC 6901) selects; the whole answer without one.
    Raises ResponseShapeError when the pointer leads nowhere."""
    pointer = str(config.get("response_pointer", ""))
    if not pointer:
        return body
    value = body
    for token in pointer[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, Mapping) and token in value:
            value = value[token]
        elif isinstance(value, list) and _is_index(token) and int(token) < len(value):
            value = value[int(token)]
        else:
            raise ResponseShapeError(f"the answer has nothing at {pointer}")
    return value


def _is_index(token: str) -> bool:
    return token.isdigit() and token.isascii() and (token == "0" or not token.startswith("0"))


def _text(value: Any) -> str:
    """A value as URL and header text: strings as they are, everything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _refused(name: str, problem: str, hint: str) -> InvalidArgsError:
    return InvalidArgsError(
        f"{name} {problem}", hint=hint, details=[ErrorDetail(path=f"/{name}", problem=problem)]
    )


def _path_segment(name: str, value: Any) -> str:
    """One path segment: every reserved character percent-encoded, so a value never adds a
    segment; empty, '.' and '..' are refused, since they would name another resource, and so
    is a value with a '.' or '..' part between slashes: a server that decodes %2F before
    resolving the path would climb out of the base's."""
    if value is None:
        raise _refused(name, "is needed: it fills a part of the request's path", f"Give {name}.")
    if not isinstance(value, _SCALARS):
        raise _refused(name, "must be a single value: it fills a part of the request's path",
                       f"Give {name} as one string or number.")
    text = _text(value)
    if text in ("", ".", ".."):
        raise _refused(name, f"cannot be {text!r}: it fills a part of the request's path",
                       f"Give the {name} of an existing object.")
    if {".", ".."} & set(re.split(r"[/\\]", text)):
        raise _refused(name, "cannot hold a '.' or '..' between slashes: it fills a part of the "
                       "request's path", f"Give the {name} of an existing object.")
    return quote(text, safe="")


def _query_pairs(names: Sequence[str], arguments: Mapping[str, Any]) -> list[tuple[str, str]]:
    pairs = []
    for name in names:
        value = arguments.get(name)
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                pairs.append((name, _text(item)))
    return pairs


def _header_value(header: str, name: str, value: Any) -> str:
    text = _text(value)
    if not isinstance(value, _SCALARS) or not (text.isascii() and text.isprintable()):
        raise _refused(name, f"goes in the {header} header, which carries printable ASCII only",
                       f"Give {name} as one value of plain ASCII letters, digits and punctuation.")
    return text
