"""How one value is written on the wire: OpenAPI 3.0/3.1's parameter styles (§"Style Values",
defined by RFC 6570 for simple, label, matrix and form), the bracket notation of deepObject,
and the rule that a null is left out. Pure.

Our own code rather than a library's: aiopenapi3's codec is a private mixin of its pydantic
Parameter model (a document must be loaded into its models to use it), openapi-core only
deserializes on the server side, and uritemplate (RFC 6570) has no spaceDelimited,
pipeDelimited or deepObject, writes booleans as Python does (`True`), and cannot leave
reserved characters unencoded in a query (allowReserved).

Percent-encoding is done here, so the executor pastes the pairs as they are: the delimiters
a style adds (`,` `|` `[]` `;` `.`) stay literal while the same characters inside a value are
encoded, and a server splitting on them reads each item back.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from apps.catalog.http_config import DEFAULT_STYLES
from apps.common import json_pointer

SCALARS = (str, int, float, bool)
# allowReserved: RFC 3986's reserved characters go unencoded, except those that would end a
# pair or the query ('&', '=', '#') or that a form decoder reads as a space ('+').
_RESERVED_KEPT = ":/?[]@!$'()*,;"
_DELIMITERS = {"form": ",", "spaceDelimited": "%20", "pipeDelimited": "|"}


class UnwritableKey(ValueError):
    """An object's key the bracket notation cannot carry: empty (`metadata[]` reads as an
    array) or holding a bracket (`a[b]` reads as nesting)."""

    def __init__(self, key: str, prefix: str) -> None:
        super().__init__(f"has the key {key!r} (in {prefix}), which the bracket notation cannot carry: "
                         "a key must not be empty nor hold '[' or ']'")
        self.field = prefix.split("[", 1)[0]  # the top-level name the key is under


@dataclass(frozen=True)
class Style:
    """One argument's style (a `serialization` entry, or a body property's `body_encoding`)."""

    style: str
    explode: bool
    allow_reserved: bool = False
    multi_segment: bool = False

    @classmethod
    def of(cls, entry: Mapping[str, Any], location: str) -> Style:
        style = str(entry.get("style", DEFAULT_STYLES[location]))
        # OpenAPI's default: explode for form (and deepObject, defined only so), not for the others.
        explode = bool(entry.get("explode", style in ("form", "deepObject")))
        return cls(style, explode, bool(entry.get("allow_reserved")), bool(entry.get("multi_segment")))


def text(value: Any) -> str:
    """A value as text: strings as they are, everything else as JSON writes it (`true`, `20`)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def encoded(value: str, *, allow_reserved: bool = False, safe: str = "") -> str:
    return quote(value, safe=_RESERVED_KEPT + safe if allow_reserved else safe)


def without_nulls(value: Any, keep: Collection[str] = (), pointer: str = "") -> Any:
    """`value` with every null member and array item left out, at any depth, but those whose
    JSON pointer is in `keep` (an array's items are written '-': `/lines/-/note`). Null means
    "leave it out" (principle 7): only the API's nullable members may receive one."""
    if isinstance(value, Mapping):
        kept = {}
        for key, member in value.items():
            where = f"{pointer}/{json_pointer.escaped(key)}"
            if member is not None or where in keep:
                kept[key] = without_nulls(member, keep, where)
        return kept
    if isinstance(value, list):
        where = f"{pointer}/-"
        return [without_nulls(item, keep, where) for item in value if item is not None or where in keep]
    return value


def _flat(value: Mapping[str, Any] | list[Any], explode: bool, enc: Any, sep: str = "=") -> list[str]:
    """An array's items, or an object's members (`k=v` exploded, `k`, `v` not), encoded."""
    if isinstance(value, list):
        return [enc(text(item)) for item in value]
    if explode:
        return [f"{enc(str(k))}{sep}{enc(text(v))}" for k, v in value.items()]
    return [part for k, v in value.items() for part in (enc(str(k)), enc(text(v)))]


def path_text(name: str, value: Any, style: Style) -> str:
    """A path parameter (simple, label, matrix), RFC 6570's {x}, {.x}, {;x} with `*` when exploded.
    With multi_segment a string keeps its '/' (GitHub's x-multi-segment paths)."""

    def enc(part: str) -> str:
        return quote(part, safe="/" if style.multi_segment else "")

    label = style.style == "label"
    if isinstance(value, (list, Mapping)):
        if not value:  # RFC 6570: an empty list or object is undefined, and expands to nothing
            return ""
        parts = _flat(value, style.explode, enc)
        if style.style == "matrix":
            if style.explode:
                return "".join(
                    f";{part}" if isinstance(value, Mapping) else f";{enc(name)}={part}" for part in parts
                )
            return f";{enc(name)}=" + ",".join(parts)
        joined = ("." if label and style.explode else ",").join(parts)
        return "." + joined if label else joined
    written = enc(text(value))
    if style.style == "matrix":
        return f";{enc(name)}" + (f"={written}" if written else "")
    return "." + written if label else written


def query_pairs(wire_name: str, value: Any, style: Style) -> list[tuple[str, str]]:
    """A query parameter (or a form body's property) as percent-encoded name=value pairs:
    form, spaceDelimited, pipeDelimited, or deepObject's bracket notation."""

    def enc(part: str) -> str:
        return encoded(part, allow_reserved=style.allow_reserved)

    name = encoded(wire_name, safe="[]")
    if style.style == "deepObject":
        return [(encoded(key, safe="[]"), enc(item)) for key, item in bracket_pairs(wire_name, value)]
    if not isinstance(value, (list, Mapping)):
        return [(name, enc(text(value)))]
    if not value:
        return []
    if style.explode:
        if isinstance(value, list):
            return [(name, enc(text(item))) for item in value]
        return [(enc(str(k)), enc(text(v))) for k, v in value.items()]
    return [(name, _DELIMITERS[style.style].join(_flat(value, False, enc)))]


def bracket_pairs(prefix: str, value: Any) -> list[tuple[str, str]]:
    """Stripe's bracket notation (deepObject, nested): `metadata[order_id]`, arrays of scalars
    `expand[]`, arrays of objects by index `items[0][price]`. Unencoded. Raises UnwritableKey."""
    if isinstance(value, Mapping):
        for key in value:
            if not key or "[" in key or "]" in key:
                raise UnwritableKey(key, prefix)
        return [pair for key, member in value.items() for pair in bracket_pairs(f"{prefix}[{key}]", member)]
    if isinstance(value, list):
        if all(isinstance(item, SCALARS) for item in value):
            return [(f"{prefix}[]", text(item)) for item in value]
        return [pair for i, item in enumerate(value) for pair in bracket_pairs(f"{prefix}[{i}]", item)]
    return [(prefix, text(value))]


def header_text(value: Any, style: Style) -> str:
    """A header parameter (simple style), not percent-encoded: a header carries the text itself."""
    if isinstance(value, (list, Mapping)):
        return ",".join(_flat(value, style.explode, str))
    return text(value)


def cookie_pairs(wire_name: str, value: Any, style: Style) -> list[str]:
    """A cookie parameter (form style): `name=value` strings, joined by '; ' into one Cookie header."""
    return [f"{name}={written}" for name, written in query_pairs(wire_name, value, style)]
