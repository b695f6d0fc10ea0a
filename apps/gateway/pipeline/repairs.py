"""The fix of an `invalid_args` detail as data (contract §3): what a program applies without
reading the hint.

The schema stage (schema.py) asks here for the fields of each jsonschema error; the rules
stage (rules.py) builds its `swap` and `split` itself. Only fields that apply are returned,
and every `example` or `default` has passed the field's own schema.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from apps.gateway.text import pointer

from .examples import Check, converted, field_example

MAX_ALLOWED = 50
MAX_COMPARED = 200
_BOUND_KEYWORDS = {
    "minimum": ("minimum", "maximum"),
    "maximum": ("minimum", "maximum"),
    "exclusiveMinimum": ("minimum", "maximum"),
    "exclusiveMaximum": ("minimum", "maximum"),
    "minLength": ("minLength", "maxLength"),
    "maxLength": ("minLength", "maxLength"),
    "minItems": ("minItems", "maxItems"),
    "maxItems": ("minItems", "maxItems"),
}


def closest_first(values: Sequence[Any], sent: Any) -> list[Any]:
    """The allowed values, the most similar to what was sent first (ties keep their order)."""
    # Cut: a megabyte sent for an enum must not cost a megabyte-long comparison per value.
    said = str(sent)[:MAX_COMPARED].strip().lower()

    def distance(value: Any) -> float:
        return -difflib.SequenceMatcher(None, said, str(value).lower()).ratio()

    return sorted(values, key=distance)[:MAX_ALLOWED]


def schema_repair(
    keyword: str, schema: Mapping[str, Any], instance: Any, value: Any, check: Check
) -> dict[str, Any]:
    """The repair fields of one failed keyword at one place (empty when none applies)."""
    if keyword == "enum" and isinstance(value, list):
        return {"allowed": closest_first(value, instance)}
    if keyword == "const":
        return {"allowed": [value]}
    if keyword in _BOUND_KEYWORDS:
        repair = _bounds(schema, keyword)
        if keyword in ("minLength", "exclusiveMinimum", "exclusiveMaximum"):
            # No clamp repairs these exactly: a value that passes does.
            repair["example"] = field_example(schema, check)
        return repair
    if keyword == "type":
        fixed = converted(instance, value)
        if fixed is None or not check(schema, fixed):
            fixed = field_example(schema, check)
        names = value if isinstance(value, list) else [value]
        return {"expected_type": names[0] if len(names) == 1 else list(names), "example": fixed}
    if keyword == "format":
        return {"format": value, "example": field_example(schema, check)}
    if keyword == "pattern":
        return {"pattern": value, "example": field_example(schema, check)}
    return {}


def _bounds(schema: Mapping[str, Any], keyword: str) -> dict[str, Any]:
    low_key, high_key = _BOUND_KEYWORDS[keyword]
    repair = {key: schema[key] for key in (low_key, high_key) if _is_number(schema.get(key))}
    # An exclusive bound of an integer is an inclusive one a step inside.
    if schema.get("type") == "integer" and low_key == "minimum":
        low, high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if "minimum" not in repair and isinstance(low, int) and not isinstance(low, bool):
            repair["minimum"] = low + 1
        if "maximum" not in repair and isinstance(high, int) and not isinstance(high, bool):
            repair["maximum"] = high - 1
    return repair


def missing_repair(
    path: Sequence[str | int], field_schema: Any, check: Check
) -> dict[str, Any]:
    """A missing field: its pointer, and the schema's default or an example that passes."""
    repair: dict[str, Any] = {"missing": pointer(path)}
    if not isinstance(field_schema, Mapping):
        return repair
    default = field_schema.get("default")
    if default is not None and check(field_schema, default):
        repair["default"] = default
    else:
        repair["example"] = field_example(field_schema, check)
    return repair


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
