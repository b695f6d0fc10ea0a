"""Values a field's schema accepts, for the `example` of an `invalid_args` detail.

Every value offered here is checked against the field's own schema by the caller before it
is sent: a program applies it without reading it, so a guess that does not pass would make
the repaired call fail again. When nothing passes, no example is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from apps.common.schemas.patterns import search

# Whether a value passes a subschema (the caller binds the version's validator).
Check = Callable[[Mapping[str, Any], Any], bool]

DATE_EXAMPLE = "2026-01-31"
FORMAT_EXAMPLES: dict[str, str] = {
    "date": DATE_EXAMPLE,
    "date-time": "2026-01-31T09:30:00Z",
    "time": "09:30:00Z",
    "email": "ana@example.com",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uri": "https://example.com/",
    "hostname": "example.com",
}
# Patterns whose generated example would be a poor value (0042-42-42 matches a date pattern
# but is no date, and date rules refuse it).
KNOWN_PATTERN_EXAMPLES: dict[str, str] = {
    r"^\d{4}-\d{2}-\d{2}$": DATE_EXAMPLE,
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$": DATE_EXAMPLE,
    r"^\d{4}-\d{2}$": "2026-01",
    r"^\d{2}:\d{2}$": "09:30",
}
MAX_EXAMPLE_CHARS = 200
_CANDIDATE_CHARS = "aA0_-. x@/:+,"
_ESCAPES = {"d": "0", "w": "a", "s": " ", "D": "a", "W": "-", "S": "a"}


class _Unsupported(Exception):
    """A regex construct the generator does not cover: no example rather than a wrong one."""


def pattern_example(pattern: str) -> str | None:
    """A string that `pattern` matches (checked), or None when none could be made."""
    text = KNOWN_PATTERN_EXAMPLES.get(pattern)
    if text is None:
        try:
            text, end = _sequence(pattern, 0)
        except (_Unsupported, IndexError):
            return None
        if end != len(pattern):
            return None
    return text if len(text) <= MAX_EXAMPLE_CHARS and search(pattern, text) else None


def _sequence(pattern: str, i: int) -> tuple[str, int]:
    """The first alternative from `i` up to a closing parenthesis, and where it stopped."""
    out: list[str] = []
    while i < len(pattern) and pattern[i] not in "|)":
        atom, i = _atom(pattern, i)
        count, i = _quantifier(pattern, i)
        out.append(atom(count))
        if sum(map(len, out)) > MAX_EXAMPLE_CHARS:
            raise _Unsupported
    while i < len(pattern) and pattern[i] == "|":
        _, i = _sequence(pattern, i + 1)
    return "".join(out), i


def _atom(pattern: str, i: int) -> tuple[Callable[[int], str], int]:
    char = pattern[i]
    if char in "^$":
        return (lambda n: ""), i + 1
    if char == "(":
        i += 1
        if pattern.startswith("?:", i):
            i += 2
        elif pattern.startswith("?P<", i) or (pattern.startswith("?<", i) and pattern[i + 2] not in "=!"):
            i = pattern.index(">", i) + 1
        elif pattern[i] == "?":
            raise _Unsupported
        inner, i = _sequence(pattern, i)
        if pattern[i] != ")":
            raise _Unsupported
        return (lambda n: inner * n), i + 1
    if char == "[":
        end = i + 1
        end += pattern[end] == "^"
        end += pattern[end] == "]"
        while pattern[end] != "]":
            end += 2 if pattern[end] == "\\" else 1
        return _chars(f"{pattern[i:end + 1]}"), end + 1
    if char == "\\":
        escaped = pattern[i + 1]
        if escaped in _ESCAPES:
            return _chars(f"\\{escaped}"), i + 2
        if escaped.isalnum():
            # \b, \p{..}, \x41, backreferences…: not worth guessing.
            raise _Unsupported
        return (lambda n: escaped * n), i + 2
    if char == ".":
        return (lambda n: "a" * n), i + 1
    if char in "*+?{":
        raise _Unsupported
    return (lambda n: char * n), i + 1


def _chars(cls: str) -> Callable[[int], str]:
    """A run of characters of a class: letters where allowed; a run of digits ends in 42, as
    ids in examples usually do."""
    allowed = [c for c in _CANDIDATE_CHARS + "123456789" if search(f"^{cls}$", c)]
    if not allowed:
        raise _Unsupported
    if allowed[0] == "0" and all(d in allowed for d in "24"):
        return lambda n: ("0" * n + "42")[-n:] if n else ""
    first = allowed[0]
    return lambda n: first * n


def _quantifier(pattern: str, i: int) -> tuple[int, int]:
    """How many times to repeat the atom before `i`: once when it may be left out, the least
    otherwise (a fixed count exactly)."""
    if i >= len(pattern) or pattern[i] not in "*+?{":
        return 1, i
    char = pattern[i]
    if char == "{":
        close = pattern.index("}", i)
        low, _, high = pattern[i + 1 : close].partition(",")
        if not low.strip().isdigit():
            raise _Unsupported
        count = int(low)
        if count == 0 and (not high.strip() or int(high) >= 1):
            count = 1
        i = close + 1
    else:
        count = 0 if char == "*" else 1
        i += 1
    if i < len(pattern) and pattern[i] == "?":
        i += 1
    return count, i


def field_example(schema: Mapping[str, Any], check: Check) -> Any:
    """A value `schema` accepts, or None: its own examples, const, first enum value, a format
    or pattern example, else a placeholder of its type."""
    for candidate in _candidates(schema):
        if candidate is not None and check(schema, candidate):
            return candidate
    return None


def _candidates(schema: Mapping[str, Any]) -> Iterator[Any]:
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        yield examples[0]
    if "const" in schema:
        yield schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        yield schema["enum"][0]
    if isinstance(schema.get("format"), str):
        yield FORMAT_EXAMPLES.get(schema["format"])
    if isinstance(schema.get("pattern"), str):
        yield pattern_example(schema["pattern"])
    types = schema.get("type")
    for name in types if isinstance(types, list) else [types]:
        yield _placeholder(str(name), schema)


def _placeholder(type_name: str, schema: Mapping[str, Any]) -> Any:
    if type_name in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is None and isinstance(schema.get("exclusiveMinimum"), int | float):
            low = schema["exclusiveMinimum"] + 1
        if low is not None:
            return low
        return min(0, high) if isinstance(high, int | float) else 0
    if type_name == "string":
        length = schema.get("minLength")
        return "x" * max(length if isinstance(length, int) else 0, 1)
    return {"boolean": False, "array": [], "object": {}}.get(type_name)


def converted(value: Any, expected: Any) -> Any:
    """`value` in the expected JSON type when it converts without guessing, else None:
    "20" → 20, 20 → "20", "true" → True."""
    names = expected if isinstance(expected, list) else [expected]
    for name in names:
        if isinstance(value, str):
            text = value.strip()
            if name == "integer" and text.lstrip("-").isdigit() and len(text) <= 16:
                return int(text)
            if name == "number":
                try:
                    number = float(text)
                except ValueError:
                    continue
                if number == number and abs(number) != float("inf"):
                    return int(number) if number.is_integer() else number
            if name == "boolean" and text.lower() in ("true", "false"):
                return text.lower() == "true"
        elif name == "string" and isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
    return None
