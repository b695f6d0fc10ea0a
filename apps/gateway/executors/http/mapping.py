"""How an http version's arguments become a request, and its answer a result. Pure.

The version's executor config says where each argument goes (docs/http-tools.md): `{name}`
placeholders of the path, query parameters, headers and cookies listed by name, each written
in its `serialization` style (serialization.py; without one, as before: one percent-encoded
path segment, arrays repeated in the query), and a body of the rest, of listed arguments or
of one argument, in its `body_media_type` (bodies.py). Every null is left out but those
`send_null` lists. `response_pointer` selects the part of the answer that is the result.
"""

from __future__ import annotations

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
from apps.catalog.http_config import JSON_MEDIA_TYPE
from apps.common import json_pointer
from apps.common.errors import ErrorDetail, InvalidArgsError

from .bodies import BodyShapeError, encoded_body
from .serialization import (
    SCALARS,
    Style,
    UnwritableKey,
    cookie_pairs,
    header_text,
    path_text,
    query_pairs,
    text,
    without_nulls,
)


@dataclass(frozen=True)
class RequestParts:
    """One request as the mapping makes it; the base URL and credentials are added by the executor.
    `query` holds percent-encoded pairs, pasted as they are."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    headers: Mapping[str, str]
    content: bytes | None = None  # None: no body
    content_type: str | None = None


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
    value that is not printable ASCII, a form body that is not an object): nothing can be
    sent, and the model can fix it."""
    method = str(config.get("method", DEFAULT_HTTP_METHOD))
    template = str(config.get("path", ""))
    rules: Mapping[str, Mapping[str, Any]] = config.get("serialization") or {}
    # Outside the body no null is ever sent, at any depth; the body's are judged in _body.
    present = {name: without_nulls(value) for name, value in arguments.items() if value is not None}
    path = PATH_PLACEHOLDER.sub(lambda m: _path_segment(m.group(1), present.get(m.group(1)), rules), template)
    query_names: Sequence[str] = config.get("query") or ()
    header_args: Mapping[str, str] = config.get("headers") or {}
    cookie_args: Mapping[str, str] = config.get("cookies") or {}
    headers = {header: _header_value(header, name, present[name], rules.get(name))
               for header, name in header_args.items() if name in present}
    cookies = [pair for cookie, name in cookie_args.items() if name in present
               for pair in cookie_pairs(cookie, present[name], Style.of(rules.get(name) or {}, "cookie"))]
    if cookies:
        headers["Cookie"] = "; ".join(cookies)
    headers["Accept"] = "application/json"
    if idempotency_key:
        headers[str(config.get("idempotency_header", DEFAULT_IDEMPOTENCY_HEADER))] = wire_idempotency_key(
            idempotency_key
        )
    content, content_type = _body(config, arguments)
    return RequestParts(
        method=method,
        path=path,
        query=tuple(pair for name in query_names if name in present
                    for pair in _query_pairs(name, present[name], rules.get(name))),
        headers=headers,
        content=content,
        content_type=content_type,
    )


def _body(config: Mapping[str, Any], arguments: Mapping[str, Any]) -> tuple[bytes | None, str | None]:
    """The body's bytes and Content-Type, or (None, None) for no body. Its nulls are left out,
    at any depth, but those `send_null` points at (JSON pointers into the body)."""
    bodyless = config.get("method", DEFAULT_HTTP_METHOD) in BODYLESS_METHODS
    body = config.get("body", None if bodyless else "rest")
    keep = set(config.get("send_null") or ())
    media_type = str(config.get("body_media_type", JSON_MEDIA_TYPE))
    encoding = config.get("body_encoding") or {}
    if body == "rest":
        used = {*path_placeholders(str(config.get("path", ""))), *(config.get("query") or ()),
                *(config.get("headers") or {}).values(), *(config.get("cookies") or {}).values()}
        fields = {name: value for name, value in arguments.items() if name not in used}
    elif isinstance(body, list):
        fields = {name: arguments[name] for name in body if name in arguments}
    elif isinstance(body, Mapping) and arguments.get(name := str(body["argument"])) is not None:
        try:
            return encoded_body(media_type, without_nulls(arguments[name], keep), encoding)
        except BodyShapeError as exc:
            raise _refused(name, f"cannot be sent: {exc}",
                           f"Give {name} as an object of named fields.") from None
    else:
        return None, None
    try:
        return encoded_body(media_type, without_nulls(fields, keep), encoding)
    except UnwritableKey as exc:
        raise _unwritable(exc.field, exc) from None


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
        query=() if filled else (("idempotency_key", quote(wire, safe="")),),
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
        token = json_pointer.unescaped(token)
        if isinstance(value, Mapping) and token in value:
            value = value[token]
        elif isinstance(value, list) and _is_index(token) and int(token) < len(value):
            value = value[int(token)]
        else:
            raise ResponseShapeError(f"the answer has nothing at {pointer}")
    return value


def _is_index(token: str) -> bool:
    return token.isdigit() and token.isascii() and (token == "0" or not token.startswith("0"))


def _refused(name: str, problem: str, hint: str) -> InvalidArgsError:
    return InvalidArgsError(
        f"{name} {problem}", hint=hint, details=[ErrorDetail(path=f"/{name}", problem=problem)]
    )


def _path_segment(name: str, value: Any, rules: Mapping[str, Mapping[str, Any]]) -> str:
    """A path parameter. Without a `serialization` entry, one segment of a single value; with
    one, its style (arrays and objects too), and '/' kept only when multi_segment says so.
    Either way, every other reserved character is percent-encoded, and empty, '.' and '..' are
    refused, since they would name another resource, and so is a value with a '.' or '..' part
    between slashes: a server that decodes %2F before resolving the path would climb out of
    the base's."""
    if value is None:
        raise _refused(name, "is needed: it fills a part of the request's path", f"Give {name}.")
    if name not in rules and not isinstance(value, SCALARS):
        raise _refused(name, "must be a single value: it fills a part of the request's path",
                       f"Give {name} as one string or number.")
    style = Style.of(rules.get(name) or {}, "path")
    if style.multi_segment and not isinstance(value, str):
        raise _refused(name, "must be a string: it fills a path of segments",
                       f"Give {name} as one string, its segments separated by '/'.")
    written = path_text(name, value, style)
    if written in ("", ".", ".."):
        raise _refused(name, f"cannot be {text(value) if isinstance(value, SCALARS) else written!r}: it "
                       "fills a part of the request's path", f"Give the {name} of an existing object.")
    checked = text(value) if isinstance(value, SCALARS) else written
    if {".", ".."} & set(re.split(r"[/\\]", checked)):
        raise _refused(name, "cannot hold a '.' or '..' between slashes: it fills a part of the "
                       "request's path", f"Give the {name} of an existing object.")
    return written


def _query_pairs(name: str, value: Any, rule: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """Without a `serialization` entry, as before: arrays repeated, objects as JSON text."""
    if rule is None:
        return query_pairs(name, text(value) if isinstance(value, Mapping) else value, Style("form", True))
    try:
        return query_pairs(str(rule.get("name", name)), value, Style.of(rule, "query"))
    except UnwritableKey as exc:
        raise _unwritable(name, exc) from None


def _unwritable(name: str, exc: UnwritableKey) -> InvalidArgsError:
    return _refused(name, str(exc), f"Leave out that key of {name}, or rename it.")


def _header_value(header: str, name: str, value: Any, rule: Mapping[str, Any] | None) -> str:
    written = header_text(value, Style.of(rule or {}, "header"))
    if (rule is None and not isinstance(value, SCALARS)) or not (written.isascii() and written.isprintable()):
        raise _refused(name, f"goes in the {header} header, which carries printable ASCII only",
                       f"Give {name} as one value of plain ASCII letters, digits and punctuation.")
    return written
