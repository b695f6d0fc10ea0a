"""JSON that others wrote, read without letting one value break a request.

Three kinds of value parse and still hurt: an integer literal Python refuses to convert
(more than `sys.get_int_max_str_digits()` digits, 4300 by default: `json.loads` raises
ValueError; past 2**53 no JSON reader holds an integer exactly anyway); a lone
surrogate (`"\\ud800"`, half of a UTF-16 pair: no Unicode character, so UTF-8, Redis, PostgreSQL
and the response renderer all fail on it); NUL (PostgreSQL text and jsonb cannot hold it).
`loads` keeps an unconvertible integer as an `OversizedInteger`, so the one call that holds it
can be refused with its place while its neighbours run; `first_hazard` finds any of them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

# The integers every JSON reader holds exactly (IEEE 754 doubles, RFC 7493 §2.2); RFC 8785,
# which the idempotency hash uses, refuses the others.
MAX_EXACT_INTEGER = 2**53 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class OversizedInteger:
    """An integer literal too long for Python to convert; only its length is kept."""

    digits: int

    def __str__(self) -> str:
        return f"an integer of {self.digits} digits"


def json_integer(text: str) -> int | OversizedInteger:
    """`parse_int` for json.loads: the integer, or a marker when Python will not convert it."""
    try:
        return int(text)
    except ValueError:
        return OversizedInteger(digits=len(text.lstrip("-")))


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """json.loads, except that an integer too long to convert becomes an OversizedInteger."""
    return json.loads(text, parse_int=json_integer, **kwargs)


def printable(text: str) -> str:
    """`text` safe to echo in an answer or a log: lone surrogates and NUL as \\u escapes."""
    if text.isascii() and "\x00" not in text:
        return text
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text).replace("\x00", "\\u0000")


class HazardKind(StrEnum):
    NUL = "nul"
    SURROGATE = "surrogate"
    INEXACT_INTEGER = "inexact_integer"
    NOT_FINITE = "not_finite"
    TOO_DEEP = "too_deep"


@dataclass(frozen=True)
class Hazard:
    """An unusable value of a JSON document: what it is and where."""

    kind: HazardKind
    problem: str  # for messages and `details`, e.g. "contains a NUL character (\\u0000)"
    path: tuple[str | int, ...] = ()


def text_hazard(text: str) -> Hazard | None:
    """What makes a string unusable (NUL, a lone surrogate), None if nothing."""
    if "\x00" in text:
        return Hazard(HazardKind.NUL, "contains a NUL character (\\u0000)")
    if not text.isascii() and (match := _SURROGATE.search(text)):
        return Hazard(HazardKind.SURROGATE, f"contains a lone surrogate (\\u{ord(match.group()):04x})")
    return None


def value_hazard(value: Any, *, exact_integers: bool = True) -> Hazard | None:
    """What makes one scalar unusable, None if nothing. Without `exact_integers`, an integer
    past 2**53 that Python converts is usable (a schema's int64 bound, never hashed)."""
    if isinstance(value, str):
        return text_hazard(value)
    if isinstance(value, OversizedInteger):
        return Hazard(HazardKind.INEXACT_INTEGER, str(value))
    if (exact_integers and isinstance(value, int) and not isinstance(value, bool)
            and abs(value) > MAX_EXACT_INTEGER):
        return Hazard(HazardKind.INEXACT_INTEGER, f"an integer of {len(str(abs(value)))} digits")
    if isinstance(value, float) and not math.isfinite(value):
        return Hazard(HazardKind.NOT_FINITE, "a number that is not finite")
    return None


def first_hazard(value: Any, *, max_depth: int | None = None, exact_integers: bool = True) -> Hazard | None:
    """The first NUL, lone surrogate, inexact integer or non-finite number in `value` (keys
    included), or the first container deeper than `max_depth`; None when there is none.

    Without recursion, and building paths only for containers: a megabyte of scalars costs
    one pass. A key that is the problem is named without NUL and with surrogates escaped, as
    the caller most likely meant it.
    """
    if not isinstance(value, dict | list):
        return value_hazard(value, exact_integers=exact_integers)
    stack: list[tuple[dict[str, Any] | list[Any], tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if max_depth is not None and len(path) >= max_depth:
            return Hazard(HazardKind.TOO_DEEP, f"nesting deeper than {max_depth} levels", path)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            if isinstance(key, str) and (found := text_hazard(key)):
                name = printable(key.replace("\x00", ""))
                return replace(found, problem=f"its name {found.problem}", path=(*path, name))
            if isinstance(child, dict | list):
                stack.append((child, (*path, key)))
            elif found := value_hazard(child, exact_integers=exact_integers):
                return replace(found, path=(*path, key))
    return None


def printable_value(value: Any) -> Any:
    """`value` with every string in it (keys too) made `printable`: what a database column or
    an answer can hold, the NUL still visible as the text \\u0000. Without recursion."""
    if isinstance(value, str):
        return printable(value)
    if not isinstance(value, dict | list):
        return value
    root: dict[str, Any] | list[Any] = {} if isinstance(value, dict) else []
    stack: list[tuple[dict[str, Any] | list[Any], dict[str, Any] | list[Any]]] = [(value, root)]
    while stack:
        source, copy = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, child in items:
            if isinstance(child, dict | list):
                made: Any = {} if isinstance(child, dict) else []
                stack.append((child, made))
            else:
                made = printable(child) if isinstance(child, str) else child
            if isinstance(copy, dict):
                copy[printable(str(key))] = made
            else:
                copy.append(made)
    return root
