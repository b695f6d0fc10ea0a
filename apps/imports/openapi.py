"""OpenAPI 3.0 and 3.1 documents read as operations. Pure: text in, frozen values out.

A document is data written by others (docs/principles.md 18): it is parsed (JSON or YAML,
no YAML aliases), its `$ref`s resolved by `jsonref` (references inside the document only:
an import never fetches what a document points to), and each operation becomes one
`Operation`: what it is, where it is, and the normalized dict a draft is made from
(drafts.py), whose digest says whether it changed since.

Problems of the document raise `OpenAPIError` naming where (a JSON pointer); an operation
that cannot be read as a finite one (a recursive schema) is returned as skipped with the
reason.
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

from .errors import ImportRefused

METHODS = ("get", "head", "post", "put", "patch", "delete")


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
