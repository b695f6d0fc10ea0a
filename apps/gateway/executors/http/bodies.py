"""A request body as bytes, by the version's `body_media_type`: JSON, a form, multipart form
data (fields, no files), or plain text. Pure.

A form property without a `body_encoding` entry is written as OpenAPI's default, style form
exploded: a scalar `k=v`, an array of scalars repeated (`MediaUrl=a&MediaUrl=b`, as Twilio
reads it); objects and arrays of objects, which that style leaves undefined, in the bracket
notation Stripe documents (`metadata[order_id]=ORD-1`, `items[0][price]=p`). With an entry,
by its style, or as one value of its `content_type` (`application/json`: the value's JSON text).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from apps.catalog.http_config import FORM_MEDIA_TYPE, MULTIPART_MEDIA_TYPE, TEXT_MEDIA_TYPE

from .serialization import SCALARS, Style, encoded, query_pairs, text


class BodyShapeError(ValueError):
    """The body's value cannot be written in the media type (a form of something not an object)."""


def encoded_body(media_type: str, value: Any, encoding: Mapping[str, Mapping[str, Any]]) -> tuple[bytes, str]:
    """The body's bytes and its Content-Type."""
    if media_type == TEXT_MEDIA_TYPE:
        return text(value).encode(), "text/plain; charset=utf-8"
    if media_type in (FORM_MEDIA_TYPE, MULTIPART_MEDIA_TYPE):
        if not isinstance(value, Mapping):
            raise BodyShapeError(f"a {media_type} body is an object of fields")
        if media_type == FORM_MEDIA_TYPE:
            pairs = [
                pair
                for name, member in value.items()
                for pair in _form_pairs(name, member, encoding.get(name))
            ]
            return "&".join(f"{k}={v}" for k, v in pairs).encode(), FORM_MEDIA_TYPE
        return _multipart(value, encoding)
    return json.dumps(
        value, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode(), "application/json"


def _form_pairs(name: str, value: Any, entry: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    entry = entry or {}
    if "style" not in entry and _is_json(entry.get("content_type")):
        return [
            (encoded(name, safe="[]"), encoded(text(value), allow_reserved=bool(entry.get("allow_reserved"))))
        ]
    if "style" not in entry and isinstance(value, list) and all(isinstance(i, SCALARS) for i in value):
        entry = {"style": "form", **entry}
    return query_pairs(name, value, Style.of({"style": "deepObject", **entry}, "query"))


def _is_json(content_type: Any) -> bool:
    return isinstance(content_type, str) and (
        content_type == "application/json" or content_type.endswith("+json")
    )


def _multipart(value: Mapping[str, Any], encoding: Mapping[str, Mapping[str, Any]]) -> tuple[bytes, str]:
    """RFC 7578 form data: one part per property (an array of scalars without an encoding entry:
    one part per item, as OpenAPI says), each with its Content-Type: text/plain for scalars,
    application/json for objects, or the encoding's content_type."""
    parts: list[tuple[str, str, bytes]] = []
    for name, member in value.items():
        content_type = (encoding.get(name) or {}).get("content_type")
        items = (
            member
            if isinstance(member, list)
            and content_type is None
            and all(isinstance(item, SCALARS) for item in member)
            else [member]
        )
        for item in items:
            kind = content_type or ("text/plain" if isinstance(item, SCALARS) else "application/json")
            parts.append((name, kind, text(item).encode()))
    # The boundary is derived from the content, so it cannot occur in it (and the body is the
    # same bytes for the same arguments).
    boundary = "toolhub-" + hashlib.sha256(b"\0".join(data for _, _, data in parts)).hexdigest()[:32]
    body = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"\r\n'
        f"Content-Type: {kind}\r\n\r\n".encode()
        + data
        + b"\r\n"
        for name, kind, data in parts
    )
    return body + f"--{boundary}--\r\n".encode(), f"{MULTIPART_MEDIA_TYPE}; boundary={boundary}"


def _quoted(name: str) -> str:
    """A field name inside the quotes of Content-Disposition, escaped as the HTML standard does."""
    return name.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")
