"""Requests checked against the original document by openapi-core (a kept validator of
OpenAPI 3.0 and 3.1 requests: parameters by style and explode, bodies by media type).

Security is not checked: the conformance upstream has no credential, and what a real API
does with one is not what this run measures. The document's servers are all replaced by
one at PLACEHOLDER_HOST with the path of the first server, the one ToolHub's import uses
as the upstream's base URL, so a request the loopback upstream received is matched
against the operation it was meant for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from jsonschema_path import SchemaPath
from openapi_core.datatypes import RequestParameters
from openapi_core.deserializing.exceptions import DeserializeError
from openapi_core.deserializing.styles import StyleDeserializersFactory
from openapi_core.templating.paths.exceptions import PathError
from openapi_core.templating.paths.finders import APICallPathFinder
from openapi_core.validation.request.exceptions import MissingRequestBody
from openapi_core.validation.request.validators import (
    APICallRequestBodyValidator,
    APICallRequestParametersValidator,
    V30RequestBodyValidator,
    V30RequestParametersValidator,
    V31RequestBodyValidator,
    V31RequestParametersValidator,
)
from openapi_core.validation.validators import BaseValidator
from werkzeug.datastructures import Headers, ImmutableMultiDict

from .brackets import STYLE_DESERIALIZERS
from .casting import casting_maps

PLACEHOLDER_HOST = "http://conformance.invalid"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


class RawRequest:
    """A request as the loopback upstream received it, in the shape openapi-core reads
    (its Request protocol): the query as decoded pairs, the cookies by name."""

    def __init__(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> None:
        self.method_name, self.target, self.headers, self.data = method, target, headers, body
        query = parse_qsl(urlsplit(target).query, keep_blank_values=True)
        self.parameters = RequestParameters(
            query=ImmutableMultiDict(query), header=Headers(list(headers.items())),
            cookie=ImmutableMultiDict(_cookies(headers.get("cookie", ""))),
        )

    @property
    def host_url(self) -> str:
        return PLACEHOLDER_HOST

    @property
    def path(self) -> str:
        """As sent: a `%2F` inside a segment stays one segment (DocumentValidator decodes the
        path parameters once the operation is found)."""
        return urlsplit(self.target).path

    @property
    def method(self) -> str:
        return self.method_name.lower()

    @property
    def body(self) -> bytes | None:
        return self.data or None

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "application/octet-stream").lower()


def _cookies(header: str) -> Iterable[tuple[str, str]]:
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name:
            yield name, value


def _without_servers(content: Mapping[str, Any], base_path: str) -> dict[str, Any]:
    """The document with one server, at PLACEHOLDER_HOST + `base_path`, and no path- or
    operation-level servers; shallow copies, the schemas shared with `content`."""
    paths: dict[str, Any] = {}
    for template, item in (content.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        copied = {k: v for k, v in item.items() if k != "servers"}
        for method in HTTP_METHODS:
            if isinstance(copied.get(method), dict):
                copied[method] = {k: v for k, v in copied[method].items() if k != "servers"}
        paths[template] = copied
    return {**content, "servers": [{"url": PLACEHOLDER_HOST + base_path}], "paths": paths}


class DocumentValidator:
    """Built once per document (openapi-core's spec of a large document is costly)."""

    def __init__(self, content: Mapping[str, Any], *, base_path: str) -> None:
        spec = SchemaPath.from_dict(_without_servers(content, base_path))
        is_31 = str(content.get("openapi", "")).startswith("3.1")
        parameters_cls: type[APICallRequestParametersValidator] = (
            V31RequestParametersValidator if is_31 else V30RequestParametersValidator
        )
        body_cls: type[APICallRequestBodyValidator] = (
            V31RequestBodyValidator if is_31 else V30RequestBodyValidator
        )
        self._paths = APICallPathFinder(spec)
        self._parameters = parameters_cls(
            spec, style_deserializers_factory=_styles(parameters_cls),
            schema_casters_factory=casting_maps(parameters_cls.schema_casters_factory),
        )
        self._body = body_cls(
            spec, style_deserializers_factory=_styles(body_cls),
            schema_casters_factory=casting_maps(body_cls.schema_casters_factory),
        )

    def errors(self, request: RawRequest) -> list[str]:
        """What the document says is wrong with `request`; empty when it is valid."""
        try:
            matched = self._paths.find(request.method, PLACEHOLDER_HOST + request.path)
        except PathError as error:
            return [_message(error)]
        variables = matched.path_result.variables
        request.parameters.path = {name: unquote(value) for name, value in variables.items()}
        found = [*self._parameters.iter_errors(request)]
        found += [e for e in self._body.iter_errors(request) if type(e) is not MissingRequestBody]
        return [*_unknown_query(request, matched.path, matched.operation), *map(_message, found)]


def _unknown_query(request: RawRequest, path: SchemaPath, operation: SchemaPath) -> list[str]:
    """Query names the operation does not declare (openapi-core lets them pass): a parameter
    sent under the wrong name, or deepObject brackets where the document has none."""
    plain: set[str] = set()
    deep: set[str] = set()
    for owner in (path, operation):
        if "parameters" not in owner:
            continue
        for parameter in owner / "parameters":
            if (parameter / "in").read_str() != "query":
                continue
            style = (parameter / "style").read_str("form")
            schema_type = (parameter / "schema" / "type").read_str("") if "schema" in parameter else ""
            if style == "form" and schema_type == "object" and (parameter / "explode").read_bool(True):
                return []  # its properties are query names of their own: any name may be one
            (deep if style == "deepObject" else plain).add((parameter / "name").read_str())
    unknown = [
        key for key in dict.fromkeys(request.parameters.query)
        if key not in plain and not (key.partition("[")[0] in deep and (key in deep or key.endswith("]")))
    ]
    return [f"Unknown query parameter {key!r} (the operation has {', '.join(sorted(plain | deep)) or 'none'})"
            for key in unknown]


def _styles(validator_cls: type[BaseValidator]) -> StyleDeserializersFactory:
    """openapi-core's style deserializers, deepObject read as Stripe writes it (brackets.py),
    casting maps' values (casting.py)."""
    return StyleDeserializersFactory(casting_maps(validator_cls.schema_casters_factory),
                                     style_deserializers=STYLE_DESERIALIZERS)


def _message(error: Exception) -> str:
    """The validator's message, then the schema errors under it (openapi-core keeps them in
    the cause), each with where in the value it is, on one line."""
    head, cause = str(error), error.__cause__
    if cause is None:
        return " ".join(head.split())
    head = head.replace(str(cause), "").rstrip(": ")
    if type(cause) is DeserializeError:  # not its subclass CastError, whose message says what failed
        style = cause.args[0] if cause.args else "its"
        return f"{head}: the value as sent cannot be read in {style} style for its schema"
    schema_errors = getattr(cause, "schema_errors", None) or ()
    details = [_schema_error(e) for e in schema_errors] or [str(cause)]
    return " ".join(f"{head}: {'; '.join(details)}".split())


def _schema_error(error: Any) -> str:
    where = "".join(f"[{part!r}]" for part in getattr(error, "absolute_path", ()))
    return f"{where} {error.message}" if where else str(error.message)
