"""Regular expressions in curator-written schemas, matched by RE2: linear time, whatever the pattern.

A tool's `pattern` and `patternProperties` come from a curator and are matched against
text a model wrote. Python's `re` backtracks: `^(a+)+$` against thirty `a`s and a `!` runs
for minutes, holding a web worker and the GIL. RE2 (google-re2) answers in time linear in
the text. It has no lookaround and no backreferences, and caps repetition counts at 1000:
schemas that need those are refused on save (catalog/definitions.py) and, if stored before this
check existed, are unavailable rather than matched by a backtracking engine
(gateway/pipeline/schema.py).

`ToolSchemaValidator` is Draft 2020-12 with the three keywords that match patterns
(`pattern`, `patternProperties`, `additionalProperties`) running RE2, and FORMAT_CHECKER
checks `format: regex` with RE2 too. The fourth keyword, `unevaluatedProperties`, matches
`patternProperties` deep inside jsonschema, so a schema may not combine the two.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import re2
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError

_OPTIONS = re2.Options()
# RE2 logs every refused pattern to stderr; refusals are reported to the curator instead.
_OPTIONS.log_errors = False

# Keywords whose value is a subschema, a list of them, or a mapping of names to them.
_ONE = ("items", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "contains",
        "propertyNames", "not", "if", "then", "else")
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_NAMED = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


@functools.lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Any:
    """The RE2 program of a pattern, built once. Raises re2.error if RE2 cannot run it."""
    return re2.compile(pattern, _OPTIONS)


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches anywhere in `text`, as JSON Schema's `pattern` means it."""
    return compile_pattern(pattern).search(text) is not None


def pattern_problem(pattern: str) -> str | None:
    """Why RE2 cannot run `pattern`, for a curator; None when it can."""
    try:
        compile_pattern(pattern)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if isinstance(exc.args[0], bytes) else str(exc)
        return (
            f"{pattern!r} cannot be matched in linear time ({reason}). ToolHub matches patterns with "
            "RE2: no lookahead, lookbehind or backreferences, and repetition counts up to 1000."
        )
    return None


def _subschemas(schema: Mapping[str, Any], where: str) -> Iterator[tuple[Any, str]]:
    for keyword in _ONE:
        if keyword in schema:
            yield schema[keyword], f"{where}/{keyword}"
    for keyword in _MANY:
        if isinstance(schema.get(keyword), list):
            yield from ((sub, f"{where}/{keyword}/{i}") for i, sub in enumerate(schema[keyword]))
    for keyword in _NAMED:
        if isinstance(schema.get(keyword), Mapping):
            yield from ((sub, f"{where}/{keyword}/{name}") for name, sub in schema[keyword].items())


def schema_pattern_problems(schema: Any) -> list[str]:
    """Every pattern of a schema that RE2 cannot run, and every combination it cannot keep
    linear, as messages naming where they are (JSON pointers into the schema)."""
    problems: list[str] = []
    uses_pattern_properties = uses_unevaluated_properties = False
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, where = stack.pop()
        if not isinstance(node, Mapping):
            continue
        if isinstance(node.get("pattern"), str) and (problem := pattern_problem(node["pattern"])):
            problems.append(f"{where or '(top)'}/pattern: {problem}")
        if isinstance(node.get("patternProperties"), Mapping):
            uses_pattern_properties = True
            for pattern in node["patternProperties"]:
                if problem := pattern_problem(pattern):
                    problems.append(f"{where or '(top)'}/patternProperties: {problem}")
        uses_unevaluated_properties |= "unevaluatedProperties" in node
        stack.extend(_subschemas(node, where))
    if uses_pattern_properties and uses_unevaluated_properties:
        problems.append(
            "unevaluatedProperties cannot be combined with patternProperties (ToolHub could not "
            "match those patterns in linear time); use additionalProperties instead."
        )
    return sorted(problems)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, pattern_properties: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


_STOCK_ADDITIONAL_PROPERTIES = Draft202012Validator.VALIDATORS["additionalProperties"]


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    # jsonschema's own keyword, told which keys the patterns match (as if listed in
    # `properties`) so that it never matches a pattern with `re` itself.
    patterns = schema.get("patternProperties")
    if patterns and validator.is_type(instance, "object"):
        matched = {key: True for key in instance if any(search(p, key) for p in patterns)}
        schema = {
            **{k: v for k, v in schema.items() if k != "patternProperties"},
            "properties": {**schema.get("properties", {}), **matched},
        }
    yield from _STOCK_ADDITIONAL_PROPERTIES(validator, additional, instance, schema)


def _is_regex(instance: object) -> bool:
    # A model-sent value of `format: regex`: compiled by RE2 like the schema's own patterns,
    # never by `re`, whose parser recurses once per group (5000 nested groups: RecursionError).
    if isinstance(instance, str):
        re2.compile(instance, _OPTIONS)
    return True


FORMAT_CHECKER = FormatChecker()
FORMAT_CHECKER.checkers = {**Draft202012Validator.FORMAT_CHECKER.checkers, "regex": (_is_regex, re2.error)}

ToolSchemaValidator = validators.extend(
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)
