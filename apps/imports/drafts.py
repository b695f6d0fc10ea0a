"""An OpenAPI operation (openapi.py) as the content of a tool version draft. Pure.

- parameters: one object schema (schemas.py) of the path, query, header, cookie and body
  parameters, with the document's `required` (an optional one stays optional: the version
  is not strict unless a curator makes it so), `additionalProperties: false` on every
  object with properties; a string path parameter, and a query, header or cookie one
  without `allowEmptyValue`, with `minLength: 1`, and outside a JSON body no empty key in
  a map nor an empty required array or object (wire.non_empty, wire.carried);
- the request mapping of the http executor (docs/http-tools.md): method, path template,
  query parameters, headers, cookies, each parameter's serialization where the document
  asks for one (wire.py), the body by media type (JSON preferred, a form with its encoding
  object, multipart without files, text) and the body members whose null the document
  accepts (`send_null`; every other null is left out of the request);
- side effect from the method: GET and HEAD `readonly`, the others `write`;
- output schema: the first 2xx `application/json` response's schema (`$ref`s expanded, in
  the operation's `response`), when it is an object schema (`result_schema`): MCP's
  outputSchema describes an object, so an array or a string result declares none.

A wire name that is not a safe argument name (Twilio's `DateSent<`, `ids[]`, `per-page`)
becomes a snake_case argument that names it; a parameter named like a body member, or
like a parameter elsewhere, gets its location as prefix (`path_owner`).

Credentials never become arguments: header and query parameters the document's security
schemes name, and `Authorization`, are left out (the upstream's credential sends them), and
so are headers the transport sets (`Accept`, `Content-Type`...) and session or credential
cookies (which the http config refuses); those, and a multipart body's optional file
fields, are listed in the draft's `dropped`. An `Idempotency-Key` header parameter becomes
the version's idempotency header. An operation ToolHub cannot map (a file upload, an octet
stream) raises `Unsupported`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apps.catalog.definitions import RESERVED_HEADERS, check_output_schema, path_problems
from apps.catalog.http_config import CREDENTIAL_COOKIE

from . import wire
from .markdown import markdown
from .names import argument_name, snake_name
from .openapi import OpenAPIError, Operation, Unsupported
from .schemas import closed, json_schema, merge_all_of, strict

READONLY_METHODS = frozenset({"GET", "HEAD"})
IDEMPOTENCY_HEADERS = frozenset({"idempotency-key", "x-idempotency-key"})
# What a call's credential sends; never an argument a model fills.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
# The executor_config keys an import writes (of http versions, then of mcp ones); a curator's
# others (response_pointer, status_path) survive a re-import.
MAPPING_KEYS = ("upstream", "method", "path", "query", "headers", "cookies", "serialization", "body",
                "body_media_type", "body_encoding", "send_null", "idempotency_header", "tool",
                "idempotency_argument")
# The draft fields an import fills, compared on re-import.
IMPORTED_FIELDS = (
    "description", "parameters", "side_effect", "executor_config", "output_schema", "annotations",
)


@dataclass(frozen=True)
class Draft:
    """The content of the draft version of one operation (and its tool's name and summary)."""

    name: str
    summary: str
    description: str
    parameters: dict[str, Any]
    side_effect: str
    executor_config: dict[str, Any]
    # What the request leaves out, `{"what", "reason"}` each: the version's source["dropped"],
    # which lint's body-dropped finding shows the curator (docs/lint.md).
    dropped: tuple[dict[str, str], ...] = ()
    # The result's object schema the document or server gave ({}: none, or not an object).
    output_schema: dict[str, Any] = field(default_factory=dict)
    # The MCP annotations the server listed (MCP's keys and types only).
    annotations: dict[str, Any] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        return {field: getattr(self, field) for field in IMPORTED_FIELDS}

    def changed_since(self, before: Draft) -> list[str]:
        """The imported fields that differ from `before`'s. The order of names in `required`
        and `body` follows the order of properties, which a JSON column does not keep, so it
        does not count."""
        return [f for f in IMPORTED_FIELDS if _unordered(getattr(self, f)) != _unordered(getattr(before, f))]

    def strict_form_is(self, parameters: Any) -> bool:
        """Whether `parameters` is this draft's schema in the strict form: what every import
        stored, with `strict` on, before optional arguments stayed optional."""
        return _unordered(strict(self.parameters)) == _unordered(parameters)


def _unordered(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _unordered(v, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [_unordered(v) for v in value]
        names = key in ("required", "body") and all(isinstance(i, str) for i in items)
        return sorted(items) if names else items
    return value


def _argument_schema(parameter: Mapping[str, Any], *, is_30: bool) -> dict[str, Any]:
    schema = parameter.get("schema")
    if schema is None:
        media = parameter.get("content") or {}
        schema = next((m.get("schema") for m in media.values() if isinstance(m, dict)), None)
    converted = json_schema(schema if isinstance(schema, dict) else {"type": "string"}, is_30=is_30)
    if parameter.get("description"):
        converted = {"description": markdown(str(parameter["description"]).strip()), **converted}
    return converted


class _Arguments:
    """The arguments of one operation as they are added: each under a name of its own."""

    def __init__(self, taken: set[str] | None = None) -> None:
        self.properties: dict[str, Any] = {}
        self.required: list[str] = []
        self.taken = set(taken or ())

    def add(self, preferred: str, schema: Any, is_required: bool, where: str) -> str:
        """Adds an argument, named `preferred` or, when another location took that name,
        `{where}_{preferred}`; returns the name."""
        for name in (preferred, f"{where}_{preferred}"):
            if name not in self.properties and name not in self.taken:
                self.properties[name] = schema
                if is_required:
                    self.required.append(name)
                return name
        raise Unsupported(f"two of its {where} parameters are both called {preferred!r}.")


def _request_body(body: Any, *, is_30: bool) -> wire.Body | None:
    """The arguments and config of an operation's request body; None without one. Raises
    Unsupported for a body ToolHub cannot send."""
    if not isinstance(body, dict) or not body.get("content"):
        return None
    media_type, media = wire.chosen_media(body["content"])
    schema = media.get("schema")
    written: dict[str, Any] = schema if isinstance(schema, dict) else {}
    title = written.get("title")
    description = body.get("description")
    return wire.request_body(
        media_type, media, merge_all_of(written), json_schema(written, is_30=is_30),
        is_required=bool(body.get("required")),
        argument=argument_name(title) if isinstance(title, str) and title.strip() else "body",
        description=str(description).strip() if description else "",
    )


def draft_of(operation: Operation, *, upstream: str) -> Draft:
    """The draft content of one operation, calling `upstream`. Raises Unsupported."""
    op = operation.normalized
    is_30 = op["openapi"] == "3.0"
    method, path = op["method"], op["path"]
    if problems := path_problems(path):
        raise Unsupported(f"its path {path!r} would leave the upstream's base URL: {'; '.join(problems)}.")
    credentials = set(op["credential_parameters"])
    body = _request_body(op.get("requestBody"), is_30=is_30)
    if body and method in READONLY_METHODS and not body.properties:
        body = None  # Stripe gives every GET an empty form body: nothing to send
    # A body member's name is its key in the body, so it keeps it; a parameter of the same
    # name is the one renamed.
    arguments = _Arguments(taken=set(body.properties) if body else set())
    query: list[str] = []
    headers: dict[str, str] = {}
    cookies: dict[str, str] = {}
    serialization: dict[str, Any] = {}
    idempotency_header = None
    dropped = list(body.dropped) if body else []

    for location in ("path", "query", "header", "cookie"):
        for parameter in (p for p in op["parameters"] if p["in"] == location):
            name = parameter["name"]
            lowered = name.lower()
            if f"{location}:{lowered}" in credentials or (
                location == "header" and lowered in CREDENTIAL_HEADERS
            ):
                continue
            if location == "header" and lowered in IDEMPOTENCY_HEADERS:
                idempotency_header = name
                continue
            if location == "header" and lowered in RESERVED_HEADERS:
                # the transport sets it (Accept, Content-Type...): not the model's to choose
                dropped.append({"what": f"the header parameter {name}", "reason": "the transport sets it"})
                continue
            if location == "cookie" and CREDENTIAL_COOKIE.search(name):
                # the http config refuses it (http_config.py): a session is not a model's to send
                dropped.append({"what": f"the cookie parameter {name}",
                                "reason": "a session or credential cookie is never an argument"})
                continue
            schema = wire.non_empty(parameter, location, _argument_schema(parameter, is_30=is_30))
            preferred = snake_name(name) if location == "header" else argument_name(name)
            argument = arguments.add(preferred, schema, location == "path" or bool(parameter.get("required")),
                                     location)
            if location == "path":
                path = path.replace(f"{{{name}}}", f"{{{argument}}}")
            elif location == "query":
                query.append(argument)
            elif location == "header":
                headers[name] = argument
            else:
                cookies[name] = argument
            if entry := wire.serialization(parameter, location, schema, argument):
                serialization[argument] = entry
    for name in re.findall(r"{([^}]+)}", path):
        if name not in arguments.properties:
            raise OpenAPIError(
                operation.pointer, f"the path names {{{name}}} but no path parameter {name!r}."
            )

    properties = dict(arguments.properties)
    required = list(arguments.required)
    if body:
        properties.update(body.properties)
        required += body.required
    parameters = closed({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    })
    config: dict[str, Any] = {"upstream": upstream, "method": method, "path": path}
    for key, value in (("query", query), ("headers", headers), ("cookies", cookies),
                       ("serialization", serialization)):
        if value:
            config[key] = value
    if body:
        config.update(body.config)
    side_effect = "readonly" if method in READONLY_METHODS else "write"
    if side_effect == "write":
        config["idempotency_header"] = idempotency_header or "Idempotency-Key"
    summary, description = markdown(str(op["summary"]).strip()), markdown(str(op["description"]).strip())
    text = "\n\n".join(dict.fromkeys(t for t in (summary, description) if t))
    return Draft(
        name=snake_name(op["operationId"] or f"{method.lower()}_{op['path']}"),
        summary=(summary or operation.key)[:200],
        description=text or f"Calls {method} {path} of {upstream}.",
        parameters=parameters,
        side_effect=side_effect,
        executor_config=config,
        dropped=tuple(dropped),
        output_schema=result_schema(op.get("response"), is_30=is_30),
    )


def result_schema(schema: Any, *, is_30: bool) -> dict[str, Any]:
    """What a document or server says a result is, as a version's output schema: converted
    like the arguments' schemas (a response's read-only fields kept), and only an object
    schema, since MCP's outputSchema describes an object. {} (none) for anything else, or for
    a schema ToolHub could not use: the output schema is optional, never a reason to skip."""
    if not isinstance(schema, dict):
        return {}
    try:
        converted = json_schema(schema, is_30=is_30, request=False)
    except Unsupported:
        return {}
    untyped = isinstance(converted, dict) and "type" not in converted
    if untyped and isinstance(converted.get("properties"), dict):
        converted = {"type": "object", **converted}
    if not isinstance(converted, dict) or converted.get("type") != "object" or check_output_schema(converted):
        return {}
    return converted
