"""The shapes of the fields a draft reads, checked where the document has them. Pure.

A field of the wrong type (a summary that is a number, parameters that are an object, a
media type that is a list) raises OpenAPIError naming its place: the import skips that
operation with the reason, and drafts.py only ever meets the shapes OpenAPI defines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import OpenAPIError
from .refs import pointer

# The JSON types each field must have (a schema is an object, or in 3.1 a boolean).
_TEXT, _FLAG, _OBJECT, _SCHEMA = (str,), (bool,), (dict,), (dict, bool)
_PATH_ITEM_FIELDS = {"summary": _TEXT, "description": _TEXT}
_OPERATION_FIELDS = {"summary": _TEXT, "description": _TEXT, "requestBody": _OBJECT}
_PARAMETER_FIELDS = {"description": _TEXT, "required": _FLAG, "schema": _SCHEMA, "content": _OBJECT,
                     "style": _TEXT, "explode": _FLAG, "allowReserved": _FLAG}
_BODY_FIELDS = {"description": _TEXT, "required": _FLAG, "content": _OBJECT}
_MEDIA_FIELDS = {"schema": _SCHEMA, "encoding": _OBJECT}
_TYPE_NAMES = {str: "text", bool: "true or false", dict: "an object"}


def path_item(item: Mapping[str, Any], where: str) -> None:
    _check_fields(item, where, _PATH_ITEM_FIELDS)


def operation(value: Mapping[str, Any], where: str) -> None:
    _check_fields(value, where, _OPERATION_FIELDS)


def parameters(item: Any, where: str) -> list[dict[str, Any]]:
    """The parameter objects at `where`, their shape checked. Header parameters HTTP itself
    sets (Accept, Content-Type, Host) are kept: the draft leaves them out of the arguments."""
    if item is None:
        return []
    if not isinstance(item, list):
        raise OpenAPIError(where, "parameters must be a list.")
    for i, parameter in enumerate(item):
        at = f"{where}/{i}"
        if not isinstance(parameter, dict) or not isinstance(parameter.get("name"), str):
            raise OpenAPIError(at, "a parameter must be an object with a name.")
        if parameter.get("in") not in ("path", "query", "header", "cookie"):
            raise OpenAPIError(
                f"{at}/in", f"must be path, query, header or cookie, not {parameter.get('in')!r}."
            )
        _check_fields(parameter, at, _PARAMETER_FIELDS)
        _check_media(parameter.get("content") or {}, f"{at}/content")
    return item


def request_body(body: Any, where: str) -> Any:
    """`body` (a request body object, or absent), its shape checked."""
    if isinstance(body, dict):
        _check_fields(body, where, _BODY_FIELDS)
        _check_media(body.get("content") or {}, f"{where}/content")
    return body


def _check_fields(value: Mapping[str, Any], where: str, fields: Mapping[str, tuple[type, ...]]) -> None:
    for name, types in fields.items():
        if name in value and not isinstance(value[name], types):
            wanted = " or ".join(_TYPE_NAMES[t] for t in types)
            raise OpenAPIError(f"{where}/{name}", f"must be {wanted}, not {type(value[name]).__name__}.")


def _check_media(content: Mapping[str, Any], where: str) -> None:
    for media_type, media in content.items():
        at = where + pointer([media_type])
        if not isinstance(media, dict):
            raise OpenAPIError(at, "a media type must be an object.")
        _check_fields(media, at, _MEDIA_FIELDS)
