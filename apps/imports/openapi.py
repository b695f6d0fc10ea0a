"""OpenAPI 3.0 and 3.1 documents as tool version drafts. Pure: text in, frozen values out.

A document is data written by others (docs/principles.md 18): it is parsed (JSON or YAML,
no YAML aliases), its `$ref`s resolved by `jsonref` (references inside the document only:
an import never fetches what a document points to), and each operation becomes one
`Operation` (what it is, where it is, the normalized dict the draft is made from and its
digest). `draft_of` turns an operation into the content of a draft:

- parameters: one strict object schema of the path, query, header and JSON body
  parameters; every property required, an optional one admitting null (the catalog's
  strict rules, apps/catalog/exports.py), `additionalProperties: false` on every object
  with properties; enums and `oneOf` kept; OpenAPI 3.0's `nullable` and 3.1's
  `type: [.., "null"]` both become a type admitting null; formats kept, with a pattern
  where RE2 matches them (apps/catalog/patterns.py);
- the request mapping of the http executor (docs/contract.md §5): method, path template,
  query parameters, headers, body;
- side effect from the method: GET and HEAD `readonly`, the others `write`.

Credentials never become arguments: header and query parameters the document's security
schemes name, and `Authorization`, are left out (the upstream's credential sends them). An
`Idempotency-Key` header parameter becomes the version's idempotency header.

Problems of the document raise `OpenAPIError` naming where (a JSON pointer); an operation
ToolHub cannot map (a non-JSON body, a required cookie, a recursive schema) raises
`Unsupported` with the reason, and the importer reports it skipped.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import jsonref
import yaml

from apps.catalog.patterns import pattern_problem

from .errors import ImportRefused

METHODS = ("get", "head", "post", "put", "patch", "delete")
READONLY_METHODS = frozenset({"GET", "HEAD"})
IDEMPOTENCY_HEADERS = frozenset({"idempotency-key", "x-idempotency-key"})
# What a call's credential sends; never an argument a model fills.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
# The executor_config keys an import writes; a curator's others (response_pointer,
# status_path) survive a re-import.
MAPPING_KEYS = ("upstream", "method", "path", "query", "headers", "body", "idempotency_header")
# The draft fields an import fills, compared on re-import.
IMPORTED_FIELDS = ("description", "parameters", "side_effect", "executor_config")

# JSON Schema's own formats are kept; OpenAPI's (int32, byte, password...) say nothing a
# validator checks and are dropped.
_JSON_SCHEMA_FORMATS = frozenset(
    {"date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4",
     "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer",
     "relative-json-pointer", "regex"}
)
FORMAT_PATTERNS = {
    "date": r"^\d{4}-\d{2}-\d{2}$",
    "date-time": r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$",
    "time": r"^\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$",
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "email": r"^[^@\s]+@[^@\s]+\.[^@\s]+$",
}
# Keywords that describe documents or code generation, not the values a call may take.
_DROPPED = frozenset(
    {"discriminator", "xml", "externalDocs", "example", "examples", "nullable", "readOnly", "writeOnly",
     "deprecated", "title", "$schema", "$id", "$anchor", "$comment", "$defs", "definitions",
     "contentMediaType", "contentEncoding"}
)
_SCHEMA_ONE = ("items", "not", "contains", "propertyNames")
_SCHEMA_MANY = ("oneOf", "anyOf", "allOf", "prefixItems")
MAX_NAME = 64


class OpenAPIError(ImportRefused):
    """The document is not an OpenAPI 3.0 or 3.1 document ToolHub can read, at `where`."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where or '(document)'}: {problem}")
        self.where = where
        self.problem = problem


class Unsupported(Exception):
    """An operation ToolHub cannot map onto a tool; the reason, for the curator."""


@dataclass(frozen=True)
class Document:
    """A parsed document with its references resolved."""

    openapi: str
    title: str
    version: str
    content: Mapping[str, Any]

    @property
    def is_30(self) -> bool:
        return self.openapi.startswith("3.0")


@dataclass(frozen=True)
class Operation:
    """One operation of a document, as the draft will be made from it."""

    key: str  # operationId, or "METHOD /path" when it has none
    pointer: str  # where it is in the document
    normalized: Mapping[str, Any]  # method, path, the operation's fields a draft uses

    @property
    def digest(self) -> str:
        return operation_digest(self.normalized)


@dataclass(frozen=True)
class Draft:
    """The content of the draft version of one operation (and its tool's name and summary)."""

    name: str
    summary: str
    description: str
    parameters: dict[str, Any]
    side_effect: str
    executor_config: dict[str, Any]

    def fields(self) -> dict[str, Any]:
        return {field: getattr(self, field) for field in IMPORTED_FIELDS}

    def changed_since(self, before: Draft) -> list[str]:
        """The imported fields that differ from `before`'s. The order of names in `required`
        and `body` follows the order of properties, which a JSON column does not keep, so it
        does not count."""
        return [f for f in IMPORTED_FIELDS if _unordered(getattr(self, f)) != _unordered(getattr(before, f))]


def _unordered(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _unordered(v, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [_unordered(v) for v in value]
        names = key in ("required", "body") and all(isinstance(i, str) for i in items)
        return sorted(items) if names else items
    return value


# --- parsing --------------------------------------------------------------------------------


class _NoAliasLoader(yaml.SafeLoader):
    """YAML without aliases: a few nested aliases expand to billions of nodes."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise OpenAPIError(
                f"line {event.start_mark.line + 1}",
                "YAML aliases (*name) are not accepted; write the value out.",
            )
        return super().compose_node(parent, index)


def _pointer(parts: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _refuse_external(uri: str) -> Any:
    raise OpenAPIError(
        "", f"$ref to {uri!r} points outside the document; an import reads one document only: "
        "bundle the referenced files into it."
    )


def parse_document(text: str | bytes) -> Document:
    """The document in `text` (JSON or YAML), its `$ref`s resolved. Raises OpenAPIError."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise OpenAPIError("", "the document is not UTF-8 text.") from None
    try:
        raw = json.loads(text)
    except ValueError:
        try:
            raw = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}" if mark else ""
            raise OpenAPIError(where, f"neither JSON nor YAML ({getattr(exc, 'problem', exc)}).") from None
        # YAML's dates and numeric keys, as JSON has them.
        raw = json.loads(json.dumps(raw, default=str))
    if not isinstance(raw, dict):
        raise OpenAPIError("", "the document must be an object (an OpenAPI document).")
    version = raw.get("openapi")
    if not isinstance(version, str) or not re.match(r"^3\.[01]\.\d+", version):
        found = f"swagger {raw['swagger']}" if "swagger" in raw else f"openapi {version!r}"
        raise OpenAPIError("/openapi", f"ToolHub imports OpenAPI 3.0 and 3.1, this is {found}.")
    try:
        content = jsonref.replace_refs(
            raw, proxies=False, lazy_load=False, merge_props=True, loader=_refuse_external
        )
    except jsonref.JsonRefError as exc:
        if isinstance(exc.cause, OpenAPIError):
            raise OpenAPIError(_pointer(exc.path), exc.cause.problem) from None
        raise OpenAPIError(
            _pointer(exc.path), f"$ref {exc.reference.get('$ref')!r} cannot be resolved ({exc.cause})."
        ) from None
    info = content.get("info") if isinstance(content.get("info"), dict) else {}
    return Document(
        openapi=version, title=str(info.get("title", "")), version=str(info.get("version", "")),
        content=content,
    )


def first_server_url(document: Document, *, fetched_from: str | None = None) -> str | None:
    """The first server's URL, its variables at their defaults; a relative one against the
    URL the document was fetched from. None when there is none to use."""
    servers = document.content.get("servers")
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], dict):
        return None
    url = str(servers[0].get("url", ""))
    for name, variable in (servers[0].get("variables") or {}).items():
        if isinstance(variable, dict) and "default" in variable:
            url = url.replace("{" + name + "}", str(variable["default"]))
    if not url.startswith(("http://", "https://")):
        return urljoin(fetched_from, url) if fetched_from else None
    return url.rstrip("/")


# --- operations -----------------------------------------------------------------------------


def _acyclic(value: Any, where: str, seen: tuple[int, ...] = ()) -> Any:
    """A deep copy of `value`; Unsupported when a resolved `$ref` made it contain itself."""
    if isinstance(value, dict | list):
        if id(value) in seen:
            raise Unsupported(f"its schema is recursive (at {where}); ToolHub needs a finite schema.")
        seen = (*seen, id(value))
        if isinstance(value, dict):
            return {k: _acyclic(v, f"{where}/{k}", seen) for k, v in value.items()}
        return [_acyclic(v, f"{where}/{i}", seen) for i, v in enumerate(value)]
    return value


def _parameters(item: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    if item is None:
        return []
    if not isinstance(item, list):
        raise OpenAPIError(where, "parameters must be a list.")
    found = []
    for i, parameter in enumerate(item):
        at = f"{where}/{i}"
        if not isinstance(parameter, dict) or not isinstance(parameter.get("name"), str):
            raise OpenAPIError(at, "a parameter must be an object with a name.")
        if parameter.get("in") not in ("path", "query", "header", "cookie"):
            raise OpenAPIError(
                f"{at}/in", f"must be path, query, header or cookie, not {parameter.get('in')!r}."
            )
        found.append((at, parameter))
    return found


def _credential_names(document: Document) -> list[str]:
    """Header and query parameters the document's API-key security schemes send."""
    schemes = (document.content.get("components") or {}).get("securitySchemes") or {}
    return sorted(
        f"{scheme['in']}:{str(scheme['name']).lower()}"
        for scheme in schemes.values()
        if isinstance(scheme, dict) and scheme.get("type") == "apiKey" and "name" in scheme
        and scheme.get("in") in ("header", "query")
    )


def document_operations(document: Document) -> list[Operation | tuple[str, str, str]]:
    """Every operation of the document in its order; one that cannot be read as a finite
    operation is (key, pointer, reason). Raises OpenAPIError for a malformed document."""
    paths = document.content.get("paths", {})
    if not isinstance(paths, dict):
        raise OpenAPIError("/paths", "must be an object of paths.")
    credentials = _credential_names(document)
    found: list[Operation | tuple[str, str, str]] = []
    keys: dict[str, str] = {}
    for path, item in paths.items():
        item_at = _pointer(["paths", path])
        if not path.startswith("/"):
            raise OpenAPIError(item_at, f"a path must start with '/', not {path!r}.")
        if not isinstance(item, dict):
            raise OpenAPIError(item_at, "a path item must be an object.")
        shared = _parameters(item.get("parameters"), f"{item_at}/parameters")
        for method in METHODS:
            if method not in item:
                continue
            at = f"{item_at}/{method}"
            operation = item[method]
            if not isinstance(operation, dict):
                raise OpenAPIError(at, "an operation must be an object.")
            operation_id = operation.get("operationId")
            if operation_id is not None and not isinstance(operation_id, str):
                raise OpenAPIError(f"{at}/operationId", "must be text.")
            key = operation_id or f"{method.upper()} {path}"
            if key in keys:
                raise OpenAPIError(f"{at}/operationId", f"{key!r} is also the operationId at {keys[key]}.")
            keys[key] = at
            merged = {(p["name"], p["in"]): p for _, p in shared}
            merged.update({(p["name"], p["in"]): p for _, p in _parameters(operation.get("parameters"),
                                                                             f"{at}/parameters")})
            normalized = {
                "method": method.upper(),
                "path": path,
                "operationId": operation_id,
                "summary": operation.get("summary") or item.get("summary") or "",
                "description": operation.get("description") or item.get("description") or "",
                "parameters": list(merged.values()),
                "requestBody": operation.get("requestBody"),
                "credential_parameters": credentials,
                "openapi": "3.0" if document.is_30 else "3.1",
            }
            try:
                found.append(Operation(key=key, pointer=at, normalized=_acyclic(normalized, at)))
            except Unsupported as exc:
                found.append((key, at, str(exc)))
    return found


def operation_digest(normalized: Mapping[str, Any]) -> str:
    text = json.dumps(normalized, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# --- schemas --------------------------------------------------------------------------------


def _admits_null(node: Any) -> bool:
    if not isinstance(node, Mapping):
        return node is not False
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "enum" in node:
        return None in node["enum"]
    if "const" in node:
        return node["const"] is None
    for key in ("oneOf", "anyOf"):
        if isinstance(node.get(key), list):
            return any(_admits_null(v) for v in node[key])
    return kind is None and not any(k in node for k in ("allOf", "not"))


def or_null(node: dict[str, Any]) -> dict[str, Any]:
    """`node` also admitting null: how a strict schema says "not given"."""
    if _admits_null(node):
        return node
    out = dict(node)
    kind = out.get("type")
    if isinstance(kind, str | list):
        out["type"] = [*(kind if isinstance(kind, list) else [kind]), "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        if "const" in out:
            out["enum"] = [out.pop("const"), None]
        return out
    for key in ("oneOf", "anyOf"):
        if isinstance(out.get(key), list):
            out[key] = [*out[key], {"type": "null"}]
            return out
    description = out.pop("description", None)
    wrapped: dict[str, Any] = {"anyOf": [out, {"type": "null"}]}
    return {"description": description, **wrapped} if description else wrapped


def _is_object(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def _merge_all_of(node: dict[str, Any]) -> dict[str, Any]:
    """An allOf of object schemas as one object (how OpenAPI documents extend a model)."""
    parts = node.get("allOf")
    if not (isinstance(parts, list) and parts and all(isinstance(p, dict) and _is_object(p) for p in parts)):
        return node
    merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
    merged["type"] = "object"
    properties: dict[str, Any] = dict(merged.get("properties") or {})
    required: list[str] = list(merged.get("required") or [])
    for part in parts:
        properties.update(part.get("properties") or {})
        required += [r for r in part.get("required") or [] if r not in required]
        if "description" in part and "description" not in merged:
            merged["description"] = part["description"]
    merged["properties"], merged["required"] = properties, required
    return merged


def json_schema(node: Any, *, is_30: bool, request: bool = True) -> Any:
    """An OpenAPI schema object as a Draft 2020-12 schema ToolHub stores: 3.0's nullable and
    boolean exclusive bounds translated, documentation keywords dropped, read-only
    properties left out of requests, formats kept with an RE2 pattern where one is known,
    and a pattern RE2 cannot run moved into the description."""
    if not isinstance(node, dict):
        return node
    node = _merge_all_of(node)
    out: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in node.items():
        if key in _DROPPED or key.startswith("x-"):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {
                name: json_schema(sub, is_30=is_30, request=request)
                for name, sub in value.items()
                if not (request and isinstance(sub, dict) and sub.get("readOnly"))
            }
        elif key == "additionalProperties" and isinstance(value, dict):
            out[key] = json_schema(value, is_30=is_30, request=request)
        elif key in _SCHEMA_ONE and isinstance(value, dict):
            out[key] = json_schema(value, is_30=is_30, request=request)
        elif key in _SCHEMA_MANY and isinstance(value, list):
            out[key] = [json_schema(sub, is_30=is_30, request=request) for sub in value]
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if value and bound in node:
                out[key] = node[bound]
        elif key in ("minimum", "maximum") and node.get(f"exclusive{key.capitalize()}") is True:
            continue
        elif key == "format":
            if value in _JSON_SCHEMA_FORMATS:
                out[key] = value
                if value in FORMAT_PATTERNS and "pattern" not in node:
                    out["pattern"] = FORMAT_PATTERNS[value]
        elif key == "pattern" and isinstance(value, str) and pattern_problem(value):
            notes.append(f"Must match the regular expression {value} (not checked by ToolHub).")
        else:
            out[key] = value
    if "properties" in out and "required" in out:
        out["required"] = [r for r in out["required"] if r in out["properties"]]
    if is_30 and node.get("nullable") is True:
        out = or_null(out)
    if notes:
        out["description"] = " ".join([out.get("description", ""), *notes]).strip()
    return out


def strict(node: Any) -> Any:
    """Every object with properties closed (`additionalProperties: false` unless it says
    otherwise) and listing every property in `required`, an optional one admitting null."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key in ("items", "additionalProperties", *_SCHEMA_ONE):
        if isinstance(out.get(key), dict):
            out[key] = strict(out[key])
    for key in _SCHEMA_MANY:
        if isinstance(out.get(key), list):
            out[key] = [strict(sub) for sub in out[key]]
    if isinstance(out.get("properties"), dict):
        required = [r for r in out.get("required") or [] if r in out["properties"]]
        out["properties"] = {
            name: strict(sub) if name in required else or_null(strict(sub)) if isinstance(sub, dict) else sub
            for name, sub in out["properties"].items()
        }
        out["required"] = [*required, *(n for n in out["properties"] if n not in required)]
        out.setdefault("additionalProperties", False)
    return out


# --- drafts ---------------------------------------------------------------------------------


def snake_name(text: str) -> str:
    """A tool name from an operationId or a method and path: snake_case, at most 64."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    name = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "operation"
    if not name[0].isalpha():
        name = f"op_{name}"
    return name[:MAX_NAME].rstrip("_")


def _argument_schema(parameter: Mapping[str, Any], *, is_30: bool) -> dict[str, Any]:
    schema = parameter.get("schema")
    if schema is None:
        media = parameter.get("content") or {}
        schema = next((m.get("schema") for m in media.values() if isinstance(m, dict)), None)
    converted = json_schema(schema if isinstance(schema, dict) else {"type": "string"}, is_30=is_30)
    if parameter.get("description"):
        converted = {"description": str(parameter["description"]).strip(), **converted}
    return converted


def _json_body(body: Any) -> tuple[Mapping[str, Any] | None, bool]:
    """The JSON schema of an operation's request body and whether the body is required."""
    if not isinstance(body, dict):
        return None, False
    media = body.get("content") or {}
    json_type = next(
        (t for t in media if t.split(";")[0].strip() == "application/json" or t.endswith("+json")), None
    )
    if json_type is None:
        if body.get("required"):
            types = ", ".join(media) or "none"
            raise Unsupported(f"its request body is not JSON ({types}); ToolHub sends JSON bodies only.")
        return None, False
    schema = (media[json_type] or {}).get("schema") or {}
    return schema, bool(body.get("required"))


def draft_of(operation: Operation, *, upstream: str) -> Draft:
    """The draft content of one operation, calling `upstream`. Raises Unsupported."""
    op = operation.normalized
    is_30 = op["openapi"] == "3.0"
    method, path = op["method"], op["path"]
    credentials = set(op["credential_parameters"])
    properties: dict[str, Any] = {}
    required: list[str] = []
    query: list[str] = []
    headers: dict[str, str] = {}
    idempotency_header = None

    def add(name: str, schema: dict[str, Any], is_required: bool, where: str) -> None:
        if name in properties:
            raise Unsupported(f"two of its parameters are both called {name!r} (one is the {where}).")
        properties[name] = schema
        if is_required:
            required.append(name)

    for location in ("path", "query", "header", "cookie"):
        for parameter in (p for p in op["parameters"] if p["in"] == location):
            name = parameter["name"]
            if f"{location}:{name.lower()}" in credentials or (
                location == "header" and name.lower() in CREDENTIAL_HEADERS
            ):
                continue
            if location == "cookie":
                if parameter.get("required"):
                    raise Unsupported(f"it needs the cookie {name!r}; ToolHub does not send cookies.")
                continue
            if location == "header" and name.lower() in IDEMPOTENCY_HEADERS:
                idempotency_header = name
                continue
            schema = _argument_schema(parameter, is_30=is_30)
            if location == "path":
                add(name, schema, True, "path parameter")
            elif location == "query":
                add(name, schema, bool(parameter.get("required")), "query parameter")
                query.append(name)
            else:
                argument = snake_name(name)
                add(argument, schema, bool(parameter.get("required")), f"header {name}")
                headers[name] = argument
    for name in re.findall(r"{([^}]+)}", path):
        if name not in properties:
            raise OpenAPIError(
                operation.pointer, f"the path names {{{name}}} but no path parameter {name!r}."
            )

    body_schema, body_required = _json_body(op.get("requestBody"))
    body: list[str] = []
    if body_schema is not None:
        converted = json_schema(body_schema, is_30=is_30)
        if not (isinstance(converted, dict) and _is_object(converted) and "properties" in converted):
            raise Unsupported(
                "its JSON body is not an object with named properties; ToolHub maps arguments onto "
                "a body object."
            )
        body_required_names = set(converted.get("required") or ()) if body_required else set()
        for name, schema in converted["properties"].items():
            add(name, schema, name in body_required_names, "body")
            body.append(name)

    parameters = strict({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    })
    config: dict[str, Any] = {"upstream": upstream, "method": method, "path": path}
    if query:
        config["query"] = query
    if headers:
        config["headers"] = headers
    if body_schema is not None:
        config["body"] = body
    side_effect = "readonly" if method in READONLY_METHODS else "write"
    if side_effect == "write":
        config["idempotency_header"] = idempotency_header or "Idempotency-Key"
    summary, description = str(op["summary"]).strip(), str(op["description"]).strip()
    text = "\n\n".join(dict.fromkeys(t for t in (summary, description) if t))
    return Draft(
        name=snake_name(op["operationId"] or f"{method.lower()}_{path}"),
        summary=(summary or operation.key)[:200],
        description=text or f"Calls {method} {path} of {upstream}.",
        parameters=parameters,
        side_effect=side_effect,
        executor_config=config,
    )
