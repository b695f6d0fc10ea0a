"""deepObject as Stripe writes it, for openapi-core's validator.

openapi-core reads `style: deepObject` only for a parameter of `type: object`, one level
deep (`created[gte]=1`). Stripe documents deepObject (explode) on arrays (`expand[]=a`),
on `anyOf` of an object and a scalar (`created`), and on nested objects and arrays of
objects in form bodies (`items[0][price]=p`): the bracket notation ToolHub's shared design
names for deepObject. Without this every Stripe request would be invalid whatever ToolHub
sent; with it, a request is checked by the document's schema once its brackets are read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from openapi_core.deserializing.styles import style_deserializers
from openapi_core.deserializing.styles.datatypes import StyleDeserializersDict

_KEY = re.compile(r"\[([^\[\]]*)\]")


def bracket_loads(explode: bool, name: str, schema_type: str, location: Mapping[str, Any]) -> Any:
    """The value of parameter `name` from `name[a][b]=v`, `name[]=v`, `name[0][k]=v` pairs, or
    `name=v`; KeyError when there is none (the parameter is absent), as openapi-core's."""
    if name in location:
        # A scalar has no brackets (Stripe's `created=1`, the integer of its anyOf): the
        # schema says whether a plain value is one the parameter takes.
        return location[name]
    root: dict[str, Any] = {}
    found = False
    for key, value in _pairs(location):
        if not key.startswith(name + "["):
            continue
        rest = key[len(name):]
        parts = _KEY.findall(rest)
        if "".join(f"[{part}]" for part in parts) != rest:
            continue
        found = True
        _insert(root, ["", *parts], value)
    if not found:
        raise KeyError(name)
    return _lists(root[""])


def _pairs(location: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    try:
        return list(location.items(multi=True))  # type: ignore[call-arg]  # a MultiDict: every value
    except TypeError:
        return list(location.items())


def _insert(node: Any, parts: list[str], value: Any) -> None:
    """`[]` collects the values under the key "" (a list once read); other parts are keys."""
    *path, last = parts
    for part in path:
        node = node.setdefault(part, {}) if isinstance(node, dict) else {}
    if not isinstance(node, dict):
        return  # `a=1` and `a[b]=2` together: the validator reports the value it read
    if last == "":
        node.setdefault("", []).append(value)
    else:
        node[last] = value


def _lists(value: Any) -> Any:
    """`{"": [...]}` (from `[]`) and objects whose keys are all indexes become arrays."""
    if not isinstance(value, dict):
        return value
    if set(value) == {""} and isinstance(value[""], list):
        return value[""]
    converted = {k: _lists(v) for k, v in value.items()}
    if converted and all(k.isdigit() for k in converted):
        return [converted[k] for k in sorted(converted, key=int)]
    return converted


STYLE_DESERIALIZERS: StyleDeserializersDict = {**style_deserializers, "deepObject": bracket_loads}
