"""OpenAPI 3.0 and 3.1 documents read as operations. Pure: text in, frozen values out.

A document is data written by others (docs/principles.md 18): it is parsed (JSON or YAML,
no YAML aliases) within the import's limits (limits.py: nesting, time), refused with the
place named when it holds a value ToolHub cannot store (NUL, a lone surrogate, an integer
too long to convert, NaN or an infinity), and each operation becomes one `Operation`: what
it is, where it is, and the normalized dict a draft is made from (drafts.py), whose digest
says whether it changed since. Its `$ref`s are expanded per operation, within the limits
(refs.py: references inside the document only: an import never fetches what a document
points to).

Problems of the document raise `OpenAPIError` naming where (a JSON pointer), limits
`ImportLimitExceeded`; an operation that cannot be read as a finite one (a recursive
schema) is returned as skipped with the reason.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import yaml

from apps.catalog.definitions import RESERVED_HEADERS
from apps.common import jsontext

from .errors import DocumentProblem, ImportRefused, Unsupported
from .limits import Clock, ImportLimitExceeded, ImportLimits, too_deep, too_many_import_nodes
from .refs import Expander, RefError, pointer

METHODS = ("get", "head", "post", "put", "patch", "delete")
# Header parameters ToolHub's transport sets itself; the credential ones are left out of the
# arguments instead (drafts.py), the others cannot be an argument of any call.
TRANSPORT_HEADERS = RESERVED_HEADERS - {"authorization", "proxy-authorization", "cookie"}
# How often (in YAML nodes composed) parsing looks at the import's clock.
_CLOCK_EVERY = 1_000


class OpenAPIError(DocumentProblem):
    """The document is not an OpenAPI 3.0 or 3.1 document ToolHub can read, at `where`."""


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


# --- parsing --------------------------------------------------------------------------------


# libyaml's parser (PyYAML's wheels ship it) read as events, each value built as JSON has it:
# PyYAML's pure-Python loader spent 10 s of a 4 MB document's 17 s import, its C composer
# and constructor still 4 s; the events alone take a fraction of that.
_YAML_PARSER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YAML_RESOLVER = yaml.resolver.Resolver()
_YAML_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_MERGE = "tag:yaml.org,2002:merge"
_NO_KEY = object()


def _yaml_scalar(event: yaml.ScalarEvent) -> Any:
    """A scalar as JSON has it: null, booleans and numbers by YAML's resolution rules, every
    other tag (a date, binary) as its text; an integer too long to convert as a marker
    (refused below, with its place)."""
    tag = event.tag if event.tag not in (None, "!") else \
        _YAML_RESOLVER.resolve(yaml.ScalarNode, event.value, event.implicit)
    node = yaml.ScalarNode(tag, event.value)
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:bool":
        return _YAML_CONSTRUCTOR.construct_yaml_bool(node)
    if tag == "tag:yaml.org,2002:float":
        return _YAML_CONSTRUCTOR.construct_yaml_float(node)
    if tag == "tag:yaml.org,2002:int":
        try:
            return _YAML_CONSTRUCTOR.construct_yaml_int(node)
        except ValueError:
            return jsontext.OversizedInteger(digits=len(event.value.lstrip("+-").replace("_", "")))
    return _MERGE if tag == _MERGE else event.value


def _yaml_value(text: str, limits: ImportLimits, clock: Clock | None) -> Any:
    """The one document of YAML `text` as JSON values (keys as text), without aliases (a few
    nested aliases expand to billions of nodes), nested at most `limits.max_depth` (a node's
    depth counts itself), within the import's time. Raises OpenAPIError (yaml.YAMLError for
    what the parser itself refuses), ImportLimitExceeded."""
    stack: list[list[Any]] = []  # [the open mapping or sequence, its pending key]
    root: Any = None
    documents = 0
    for event in yaml.parse(text, Loader=_YAML_PARSER):
        if isinstance(event, yaml.CollectionEndEvent):
            value = stack.pop()[0]
        elif isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise OpenAPIError(_yaml_place(event), "the YAML holds more than one document.")
            continue
        elif not isinstance(event, yaml.NodeEvent):
            continue
        else:
            where = _yaml_place(event)
            if isinstance(event, yaml.AliasEvent):
                raise OpenAPIError(where, "YAML aliases (*name) are not accepted; write the value out.")
            if clock is not None:
                clock.check(where, every=_CLOCK_EVERY)
            if len(stack) + 1 > limits.max_depth:
                raise ImportLimitExceeded(where, too_deep(limits.max_depth))
            if isinstance(event, yaml.ScalarEvent):
                value = _yaml_scalar(event)
            else:
                top = stack[-1] if stack else None
                if top is not None and isinstance(top[0], dict) and top[1] is _NO_KEY:
                    raise OpenAPIError(where, "a mapping's keys must be scalars.")
                stack.append([{} if isinstance(event, yaml.MappingStartEvent) else [], _NO_KEY])
                continue
        if not stack:
            root = value
            continue
        container = stack[-1]
        if isinstance(container[0], list):
            container[0].append(value)
        elif container[1] is _NO_KEY:
            container[1] = value if value is _MERGE else _json_key(value)
        else:
            _yaml_put(container[0], container[1], value, where)
            container[1] = _NO_KEY
    return root


def _yaml_place(event: yaml.Event) -> str:
    mark = event.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def _yaml_put(mapping: dict[str, Any], key: Any, value: Any, where: str) -> None:
    if key is not _MERGE:
        mapping[key] = value
        return
    # `<<: {...}` (or a list of mappings): their keys, where the mapping has none of its own.
    for merged in value if isinstance(value, list) else [value]:
        if not isinstance(merged, dict):
            raise OpenAPIError(where, "a merge key (<<) takes a mapping or a list of mappings.")
        for k, v in merged.items():
            mapping.setdefault(k, v)


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _json_place_deeper_than(text: str, limit: int) -> str:
    """Where JSON `text` first nests deeper than `limit`: "line L, column C" (or "" if it does
    not). Read only after the decoder ran out of stack, so the cost is in the refusal."""
    depth = 0
    for token in _JSON_TOKEN.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            if depth > limit:
                at = token.start()
                line, column = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
                return f"line {line}, column {column}"
        elif mark in "]}":
            depth -= 1
    return ""


def _loaded(text: str, limits: ImportLimits, clock: Clock | None) -> Any:
    try:
        return jsontext.loads(text)
    except RecursionError:
        raise ImportLimitExceeded(_json_place_deeper_than(text, limits.max_depth),
                                  too_deep(limits.max_depth)) from None
    except ValueError:
        pass
    try:
        return _yaml_value(text, limits, clock)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        if "maximum nesting depth" in str(getattr(exc, "problem", "")):
            # libyaml's scanner reads a flow collection ahead of the events that count it.
            raise ImportLimitExceeded(where, too_deep(limits.max_depth)) from None
        raise OpenAPIError(where, f"neither JSON nor YAML ({getattr(exc, 'problem', exc)}).") from None


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
    raw = _loaded(text, limits, clock)
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
        if parameter["in"] == "header" and parameter["name"].lower() in TRANSPORT_HEADERS:
            raise OpenAPIError(
                f"{at}/name", f"a header parameter named {parameter['name']!r} cannot be an argument: "
                "HTTP itself sets it, ToolHub sends it for every call. Remove the parameter from the "
                "document, or leave this operation out (--operations, or the form's operations field)."
            )
        found.append((at, parameter))
    return found


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
    """An operation as the document lists it, before its `$ref`s are expanded."""

    key: str
    pointer: str
    path: str
    method: str
    item: dict[str, Any]  # its path item, `$ref` expanded
    operation: dict[str, Any]


def _listed_operations(document: Document, limits: ImportLimits) -> list[_Listed]:
    paths = document.content.get("paths", {})
    if not isinstance(paths, dict):
        raise OpenAPIError("/paths", "must be an object of paths.")
    found: list[_Listed] = []
    keys: dict[str, str] = {}
    for path, written in paths.items():
        item_at = pointer(["paths", path])
        if not path.startswith("/"):
            raise OpenAPIError(item_at, f"a path must start with '/', not {path!r}.")
        if not isinstance(written, dict):
            raise OpenAPIError(item_at, "a path item must be an object.")
        # A path item may be a $ref (3.1); read as the operations it holds.
        item = _expanded(Expander(document.content, limits=limits), written, item_at) \
            if "$ref" in written else written
        if not isinstance(item, dict):
            raise OpenAPIError(item_at, "a path item must be an object.")
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
            found.append(
                _Listed(key=key, pointer=at, path=path, method=method, item=item, operation=operation)
            )
    return found


def _chosen(listed: list[_Listed], wanted: Sequence[str] | None, limits: ImportLimits) -> list[_Listed]:
    """The operations an import makes drafts of: all, or `wanted` in that order, at most
    `limits.max_operations`."""
    chosen = listed
    if wanted:
        by_key = {op.key: op for op in listed}
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
    order), its `$ref`s expanded; one that cannot be read as a finite operation is (key,
    pointer, reason). Raises OpenAPIError for a malformed document, ImportRefused for an
    unknown key of `only`, ImportLimitExceeded past `limits` (naming the operation)."""
    limits = limits or ImportLimits.from_settings()
    credentials = _credential_names(document, limits)
    found: list[Operation | tuple[str, str, str]] = []
    nodes = 0
    for listed in _chosen(_listed_operations(document, limits), only, limits):
        named = f"{listed.pointer} (operation {listed.key})"
        try:
            if clock is not None:
                clock.check(named)
            expander = Expander(document.content, limits=limits, clock=clock)
            found.append(_operation(document, listed, credentials, expander))
            nodes += expander.nodes
            if nodes > limits.max_import_nodes:
                raise ImportLimitExceeded(named, too_many_import_nodes(limits.max_import_nodes))
        except Unsupported as exc:
            found.append((listed.key, listed.pointer, str(exc)))
        except ImportLimitExceeded as exc:
            if exc.where == named:
                raise
            raise ImportLimitExceeded(exc.where, f"in operation {listed.key}, {exc.problem}") from None
    return found


def _operation(document: Document, listed: _Listed, credentials: list[str], expander: Expander) -> Operation:
    item_at, at, operation = pointer(["paths", listed.path]), listed.pointer, listed.operation
    shared = _parameters(_expanded(expander, listed.item.get("parameters"), f"{item_at}/parameters"),
                         f"{item_at}/parameters")
    own = _parameters(_expanded(expander, operation.get("parameters"), f"{at}/parameters"),
                      f"{at}/parameters")
    merged = {(p["name"], p["in"]): p for _, p in shared}
    merged.update({(p["name"], p["in"]): p for _, p in own})
    normalized = {
        "method": listed.method.upper(),
        "path": listed.path,
        "operationId": operation.get("operationId"),
        "summary": operation.get("summary") or listed.item.get("summary") or "",
        "description": operation.get("description") or listed.item.get("description") or "",
        "parameters": list(merged.values()),
        "requestBody": _expanded(expander, operation.get("requestBody"), f"{at}/requestBody"),
        "credential_parameters": credentials,
        "openapi": "3.0" if document.is_30 else "3.1",
    }
    return Operation(key=listed.key, pointer=at, normalized=normalized)


def operation_digest(normalized: Mapping[str, Any]) -> str:
    text = json.dumps(normalized, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
