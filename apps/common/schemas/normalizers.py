"""The normalizers a tool version may declare per field, and what each does to a string.

The catalog declares them (and lint checks them against the schema); the gateway's pipeline
applies them before the schema check. They only ever rewrite strings into strings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import date, datetime
from typing import Any

_DATE_FORMS = (
    re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$"),
    re.compile(r"^(\d{4})/(\d{1,2})/(\d{1,2})$"),
    re.compile(r"^(\d{4})(\d{2})(\d{2})$"),
)
_DATETIME_FORM = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def canonical_date(text: str) -> str:
    """`text` as YYYY-MM-DD when it is an unambiguous date (year first) or ISO 8601 datetime.

    Anything else comes back unchanged, for the schema or the rules to judge. A datetime
    keeps the calendar date it was written with: converting to UTC could move it a day.
    """
    value = text.strip()
    for form in _DATE_FORMS:
        if match := form.match(value):
            try:
                return date(*(int(part) for part in match.groups())).isoformat()
            except ValueError:
                return text
    if _DATETIME_FORM.match(value):
        try:
            return datetime.fromisoformat(value).date().isoformat()
        except ValueError:
            return text
    return text


# The normalizers that rewrite a string; "volatile" instead leaves a field out of the call's
# hash (apps/gateway/pipeline/normalize.py).
STRING_OPS: dict[str, Callable[[str], str]] = {
    "trim": str.strip,
    "lower": str.lower,
    "upper": str.upper,
    "date": canonical_date,
}
NORMALIZER_OPS = (*STRING_OPS, "volatile")


def normalize_value(value: Any, ops: Iterable[str]) -> Any:
    """`value` with the declared string ops applied in order (to each string of a list too)."""
    if isinstance(value, list):
        return [normalize_value(item, ops) for item in value]
    if not isinstance(value, str):
        return value
    for op in ops:
        if transform := STRING_OPS.get(op):
            value = transform(value)
    return value
