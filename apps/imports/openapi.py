"""OpenAPI 3.0 and 3.1 documents read as operations. Pure: text in, frozen values out.

A document is data written by others (docs/principles.md 18): it is parsed (JSON or YAML,
no YAML aliases: document_text.py) within the import's limits (limits.py: nesting, time), refused with the
place named when it holds a value ToolHub cannot store (NUL, a lone surrogate, an integer
too long to convert, NaN or an infinity), and each operation becomes one `Operation`: what
it is, where it is, and the normalized dict a draft is made from (drafts.py), whose digest
says whether it changed since. Its `$ref`s are expanded per operation, within the limits
(refs.py: references inside the document only: an import never fetches what a document
points to; a recursive schema is copied `RECURSION_LEVELS` deep). The first 2xx
`application/json` response's schema, when there is one, joins the normalized dict as
`response`, expanded the same way but never unrolled and within what is left of the import's
node budget: a response that cannot be expanded is left out, never a reason to skip.

Problems of the whole document (not JSON or YAML, not OpenAPI 3.x, `paths` no object) raise
`OpenAPIError` naming where (a JSON pointer), limits `ImportLimitExceeded`. A problem inside
one operation or path item (a field of the wrong type, a `$ref` to nothing, an operationId
used twice) skips that operation, its reason naming the place: the others import.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urljoin

from apps.common import jsontext

from . import shapes
from .document_text import document_value
from .errors import ImportRefused, Unsupported
from .errors import OpenAPIError as OpenAPIError
from .limits import Clock, ImportLimitExceeded, ImportLimits, too_deep, too_many_import_nodes
from .refs import Expander, RefError, pointer

METHODS = ("get", "head", "post", "put", "patch", "delete")
# How many levels deep a recursive schema is copied before it is cut (refs.py): a model
# fills a tree of comments or filters a few levels deep, and a finite schema is what every
# provider's tool format can show.
RECURSION_LEVELS = 3


@dataclass(frozen=True)
class Document:
    """A parsed document, as written: its `$ref`s are expanded per operation."""

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


def parse_document(text: str | bytes, *, limits: ImportLimits | None = None,
                   clock: Clock | None = None) -> Document:
    """The document in `text` (JSON or YAML). Raises OpenAPIError, or ImportLimitExceeded for
    a document nested deeper than `limits` allow or read past the `clock`."""
    limits = limits or ImportLimits.from_settings()
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise OpenAPIError("", "the document is not UTF-8 text.") from None
    raw = document_value(text, limits=limits, clock=clock)
    if hazard := jsontext.first_hazard(raw, max_depth=limits.max_depth, exact_integers=False):
        where = pointer(hazard.path)
        if hazard.kind == jsontext.HazardKind.TOO_DEEP:
            raise ImportLimitExceeded(where, too_deep(limits.max_depth))
        raise OpenAPIError(where, f"{hazard.problem}, which ToolHub cannot store; correct the document.")
    if not isinstance(raw, dict):
        raise OpenAPIError("", "the document must be an object (an OpenAPI document).")
    version = raw.get("openapi")
    if not isinstance(version, str) or not re.match(r"^3\.[01]\.\d+", version):
        found = f"swagger {raw['swagger']}" if "swagger" in raw else f"openapi {version!r}"
        # No kept Python library converts 2.0 (docs/operations.md, "Importing big documents").
        convert = " Convert it to OpenAPI 3.0 first (`npx swagger2openapi swagger.json -o openapi.json`) " \
            "and import the result." if "swagger" in raw else ""
        raise OpenAPIError("/openapi", f"ToolHub imports OpenAPI 3.0 and 3.1, this is {found}.{convert}")
    info = raw.get("info")
    if not isinstance(info, dict):
        info = {}
    return Document(
        openapi=version, title=str(info.get("title", "")), version=str(info.get("version", "")),
        content=raw,
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


def _expanded(expander: Expander, value: Any, where: str) -> Any:
    try:
        return expander.expand(value, where)
    except RefError as exc:
        raise OpenAPIError(exc.where, exc.problem) from None


def _credential_names(document: Document, limits: ImportLimits) -> list[str]:
    """Header and query parameters the document's API-key security schemes send."""
    components = document.content.get("components")
    raw = components.get("securitySchemes") if isinstance(components, dict) else None
    schemes = _expanded(Expander(document.content, limits=limits), raw, "/components/securitySchemes")
    return sorted(
        f"{scheme['in']}:{str(scheme['name']).lower()}"
        for scheme in (schemes.values() if isinstance(schemes, dict) else ())
        if isinstance(scheme, dict) and scheme.get("type") == "apiKey" and "name" in scheme
        and scheme.get("in") in ("header", "query")
    )


@dataclass(frozen=True)
class _Listed:
    """An operation as the document lists it, before its `$ref`s are expanded, or the
    problem that keeps it (or its whole path item) from being read."""

    key: str
    pointer: str
    path: str
    method: str
    item: dict[str, Any]  # its path item, `$ref` expanded
    operation: dict[str, Any]
    problem: OpenAPIError | None = None


def _listed_operations(document: Document, limits: ImportLimits) -> list[_Listed]:
    paths = document.content.get("paths", {})
    if not isinstance(paths, dict):
        raise OpenAPIError("/paths", "must be an object of paths.")
    found: list[_Listed] = []
    for path, written in paths.items():
        if path.startswith("x-"):
            continue  # an extension of the Paths object, not a path
        item_at = pointer(["paths", path])
        try:
            item = _path_item(document, path, written, item_at, limits)
        except OpenAPIError as exc:
            found.append(_Listed(key=path, pointer=item_at, path=path, method="", item={}, operation={},
                                 problem=exc))
            continue
        found.extend(_listed_of(item, path, item_at))
    keys: dict[str, str] = {}
    for i, listed in enumerate(found):
        if listed.problem is None and listed.key in keys:
            # Skipped under its method and path: the key names the first one.
            twice = OpenAPIError(f"{listed.pointer}/operationId",
                                 f"{listed.key!r} is also the operationId at {keys[listed.key]}.")
            found[i] = replace(listed, key=f"{listed.method.upper()} {listed.path}", problem=twice)
        keys.setdefault(found[i].key, listed.pointer)
    return found


def _path_item(
    document: Document, path: str, written: Any, item_at: str, limits: ImportLimits
) -> dict[str, Any]:
    if not path.startswith("/"):
        raise OpenAPIError(item_at, f"a path must start with '/', not {path!r}.")
    if not isinstance(written, dict):
        raise OpenAPIError(item_at, "a path item must be an object.")
    # A path item may be a $ref (3.1); read as the operations it holds.
    item = written
    if "$ref" in written:
        item = _expanded(Expander(document.content, limits=limits, unroll=RECURSION_LEVELS), written, item_at)
    if not isinstance(item, dict):
        raise OpenAPIError(item_at, "a path item must be an object.")
    shapes.path_item(item, item_at)
    return item


def _listed_of(item: dict[str, Any], path: str, item_at: str) -> list[_Listed]:
    found = []
    for method in (m for m in METHODS if m in item):
        at = f"{item_at}/{method}"
        operation, problem = item[method], None
        operation_id = operation.get("operationId") if isinstance(operation, dict) else None
        if not isinstance(operation, dict):
            operation, problem = {}, OpenAPIError(at, "an operation must be an object.")
        elif operation_id is not None and not isinstance(operation_id, str):
            operation_id, problem = None, OpenAPIError(f"{at}/operationId", "must be text.")
        found.append(_Listed(key=operation_id or f"{method.upper()} {path}", pointer=at, path=path,
                             method=method, item=item, operation=operation, problem=problem))
    return found


def _chosen(listed: list[_Listed], wanted: Sequence[str] | None, limits: ImportLimits) -> list[_Listed]:
    """The operations an import makes drafts of: all, or `wanted` in that order, at most
    `limits.max_operations`."""
    chosen = listed
    if wanted:
        by_key: dict[str, _Listed] = {}
        for op in listed:
            by_key.setdefault(op.key, op)
        if unknown := [key for key in wanted if key not in by_key]:
            raise ImportRefused(
                f"The document has no operation {', '.join(unknown)}; its operations are: "
                f"{', '.join(by_key) or 'none'}."
            )
        chosen = [by_key[key] for key in dict.fromkeys(wanted)]
    if len(chosen) > limits.max_operations:
        counted = f"{len(chosen)} operations are chosen" if wanted else \
            f"the document has {len(chosen)} operations"
        raise ImportLimitExceeded(
            "/paths",
            f"{counted}; an import makes drafts of at most {limits.max_operations} "
            "(TOOLHUB_IMPORT_MAX_OPERATIONS). Choose fewer with --operations (or the form's operations "
            "field), or split the document.",
        )
    return chosen


def document_operations(
    document: Document, *, only: Sequence[str] | None = None, limits: ImportLimits | None = None,
    clock: Clock | None = None,
) -> list[Operation | tuple[str, str, str]]:
    """Every operation of the document in its order (or those whose keys are `only`, in that
    order), its `$ref`s expanded; one that cannot be read (a field of the wrong type, a
    `$ref` to nothing, a second use of an operationId) is (key, pointer, reason), the reason
    naming the place. Raises OpenAPIError for a document whose paths are no object,
    ImportRefused for an unknown key of `only`, ImportLimitExceeded past `limits` (naming
    the operation)."""
    limits = limits or ImportLimits.from_settings()
    credentials = _credential_names(document, limits)
    found: list[Operation | tuple[str, str, str]] = []
    nodes = 0
    for listed in _chosen(_listed_operations(document, limits), only, limits):
        named = f"{listed.pointer} (operation {listed.key})"
        expander = Expander(document.content, limits=limits, clock=clock, unroll=RECURSION_LEVELS)
        try:
            if clock is not None:
                clock.check(named)
            if listed.problem is not None:
                raise listed.problem
            operation = _operation(document, listed, credentials, expander)
            nodes += expander.nodes
            if nodes > limits.max_import_nodes:
                raise ImportLimitExceeded(named, too_many_import_nodes(limits.max_import_nodes))
            budget = limits.max_import_nodes - nodes
            response, copied = _response_schema(document, listed, limits, clock, budget)
            nodes += copied
            if response is not None:
                operation = replace(operation, normalized={**operation.normalized, "response": response})
            found.append(operation)
        except (Unsupported, OpenAPIError) as exc:
            found.append((listed.key, listed.pointer, str(exc)))
        except ImportLimitExceeded as exc:
            if exc.where == named:
                raise
            if expander.unrolled and expander.nodes > limits.max_schema_nodes:
                # Copied RECURSION_LEVELS deep, a recursive schema can outgrow the limit where
                # no bomb is: that operation is skipped, as every recursive one used to be.
                found.append((listed.key, listed.pointer, f"{exc.where}: its recursive schema is copied "
                              f"{RECURSION_LEVELS} levels deep, and {exc.problem}"))
                continue
            raise ImportLimitExceeded(exc.where, f"in operation {listed.key}, {exc.problem}") from None
    return found


def _operation(document: Document, listed: _Listed, credentials: list[str], expander: Expander) -> Operation:
    item_at, at, operation = pointer(["paths", listed.path]), listed.pointer, listed.operation
    shapes.operation(operation, at)
    shared = shapes.parameters(_expanded(expander, listed.item.get("parameters"), f"{item_at}/parameters"),
                               f"{item_at}/parameters")
    own = shapes.parameters(_expanded(expander, operation.get("parameters"), f"{at}/parameters"),
                            f"{at}/parameters")
    merged = {(p["name"], p["in"]): p for p in shared}
    merged.update({(p["name"], p["in"]): p for p in own})
    body = shapes.request_body(_expanded(expander, operation.get("requestBody"), f"{at}/requestBody"),
                               f"{at}/requestBody")
    normalized = {
        "method": listed.method.upper(),
        "path": listed.path,
        "operationId": operation.get("operationId"),
        "summary": operation.get("summary") or listed.item.get("summary") or "",
        "description": operation.get("description") or listed.item.get("description") or "",
        "parameters": list(merged.values()),
        "requestBody": body,
        "credential_parameters": credentials,
        "openapi": "3.0" if document.is_30 else "3.1",
    }
    return Operation(key=listed.key, pointer=at, normalized=normalized)


def _response_schema(document: Document, listed: _Listed, limits: ImportLimits, clock: Clock | None,
                     budget: int) -> tuple[Any, int]:
    """The schema of the operation's first 2xx `application/json` response, `$ref`s expanded
    (None without one), and the nodes copied. Only a draft's output schema comes of it, which
    is optional: a response that cannot be expanded (a recursive or dangling `$ref`, past the
    import's node budget `budget` or the schema limit) gives none rather than skipping the
    operation or failing the import."""
    responses = listed.operation.get("responses")
    if not isinstance(responses, dict) or budget <= 0:
        return None, 0
    bounded = replace(limits, max_schema_nodes=min(limits.max_schema_nodes, budget))
    expander = Expander(document.content, limits=bounded, clock=clock)
    try:
        for code in sorted(str(c) for c in responses if str(c).startswith("2")):
            where = listed.pointer + pointer(["responses", code])
            response = responses[code]
            if isinstance(response, dict) and "$ref" in response:
                response = expander.expand(response, where)
            media_type, schema = _json_schema_of(response)
            if schema is not None:
                schema_at = where + pointer(["content", media_type, "schema"])
                return expander.expand(schema, schema_at), expander.nodes
    except (RefError, Unsupported, ImportLimitExceeded):
        pass
    return None, expander.nodes


def _json_schema_of(response: Any) -> tuple[str, dict[str, Any] | None]:
    """The `application/json` media type of a response object and its schema (None: none)."""
    content = response.get("content") if isinstance(response, dict) else None
    for media_type, media in (content.items() if isinstance(content, dict) else ()):
        if str(media_type).split(";")[0].strip().lower() == "application/json" and isinstance(media, dict):
            schema = media.get("schema")
            return str(media_type), schema if isinstance(schema, dict) else None
    return "", None


def operation_digest(normalized: Mapping[str, Any]) -> str:
    text = json.dumps(normalized, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
