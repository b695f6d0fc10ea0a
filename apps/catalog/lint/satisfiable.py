"""Schemas no value satisfies: every call is refused before it is sent, whatever the model does.

hypothesis-jsonschema decides it: `from_schema` canonicalises a schema (merging `allOf`,
intersecting ranges, filtering an `enum` by the type...) and gives the empty strategy for a
schema it proves unsatisfiable. Its generator is not used: with the Hypothesis releases we
install it fails on object schemas, and drawing values costs seconds where a schema needs
filtering (measured in the commit that added this module), while the canonicaliser takes
about 2 ms a schema on Stripe's, GitHub's and Twilio's drafts. It misses two cases, a
`required` name that `additionalProperties: false` forbids and `minLength` above
`maxLength`; `_contradiction` checks those by structure.

A schema the library cannot reason about (a format it does not know, an unresolvable `$ref`)
is not reported: lint says only what it proved. Results are cached by the schema's text, as
lint runs on every save and on every draft of an import.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from .findings import ERROR, Finding, ToolDefinition
from .schema_checks import properties_in

# Larger schemas (as JSON text) are checked by structure only: the canonicaliser's time grows
# with the schema, and lint must stay fast on every save. Real drafts stay far below it.
MAX_CHECKED_CHARS = 200_000


@lru_cache(maxsize=4096)
def _proved_empty(text: str) -> bool:
    # Imported here: Hypothesis is heavy to import and only lint needs it.
    from hypothesis_jsonschema import from_schema

    try:
        return bool(from_schema(json.loads(text)).is_empty)
    except Exception:  # noqa: BLE001 - any schema it cannot handle is one lint says nothing about
        return False


def _forbidden_required(node: Mapping[str, Any]) -> list[str]:
    """Names a closed object requires but forbids (no property, no pattern admits them)."""
    if node.get("additionalProperties") is not False or node.get("patternProperties"):
        return []
    properties = node.get("properties") or {}
    return [name for name in node.get("required") or () if isinstance(name, str) and name not in properties]


def _contradiction(node: Mapping[str, Any]) -> str | None:
    """What the canonicaliser misses in one node (it raises on the second instead)."""
    if forbidden := _forbidden_required(node):
        return (f"{', '.join(forbidden)} {'is' if len(forbidden) == 1 else 'are'} required but "
                "additionalProperties: false forbids every property not listed")
    low, high = node.get("minLength"), node.get("maxLength")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        return f"minLength {low} is above maxLength {high}"
    return None


def _nodes(schema: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """`schema` and the schemas of its properties and items, nested, with their paths."""
    yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            yield from _nodes(sub, f"{path}/properties/{name}")
    if isinstance(schema.get("items"), Mapping):
        yield from _nodes(schema["items"], f"{path}/items")


def unsatisfiable(schema: Any) -> str | None:
    """Why no value satisfies `schema` (or, for a contradiction inside one of its properties,
    why that property can hold no value), or None when lint cannot prove it."""
    if not isinstance(schema, Mapping):
        return None
    for path, node in _nodes(schema):
        if why := _contradiction(node):
            return f"{why}{f' (at {path.lstrip(chr(47))})' if path else ''}"
    text = json.dumps(schema, sort_keys=True, default=str)
    if len(text) <= MAX_CHECKED_CHARS and _proved_empty(text):
        return "its constraints contradict each other (e.g. allOf of closed objects with different " \
               "properties, minimum above maximum, an enum none of whose values has the type)"
    return None


def _culprits(schema: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The innermost properties whose own schema no value satisfies: (name, path, why). A
    required property that fails makes its object fail too; the property is what to fix."""
    failing = [(name, path, why) for name, path, node in properties_in(schema, "parameters")
               if (why := unsatisfiable(node))]
    return [(name, path, why) for name, path, why in failing
            if not any(other.startswith(f"{path}/") for _, other, _ in failing)]


def _requiring_all(schema: Any) -> Any:
    """`schema` with every object along its properties and items requiring all its properties,
    and every array at least one item: unsatisfiable when some property, even an optional one,
    or some array's item can hold no value (an empty array would hide it)."""
    if not isinstance(schema, Mapping):
        return schema
    copied = dict(schema)
    if isinstance(schema.get("properties"), Mapping):
        copied["properties"] = {k: _requiring_all(v) for k, v in schema["properties"].items()}
        copied["required"] = sorted({*(schema.get("required") or ()), *schema["properties"]})
    if isinstance(schema.get("items"), Mapping):
        copied["items"] = _requiring_all(schema["items"])
        least = schema.get("minItems")
        copied["minItems"] = max(1, least) if isinstance(least, int) else 1
    if isinstance(schema.get("allOf"), list):
        copied["allOf"] = [_requiring_all(branch) for branch in schema["allOf"]]
    return copied


def _never_accepted(schema: Mapping[str, Any]) -> Iterator[tuple[str, list[str]]]:
    """The properties an `allOf` names that no valid value of its object can hold (each closed
    branch forbids the others': the value is valid only while it leaves them out), for every
    `allOf` along the properties and items (Asana's is in the `data` property), with its path."""
    for path, node in _nodes(schema):
        branches = [b for b in node.get("allOf") or () if isinstance(b, Mapping)]
        names = dict.fromkeys(name for part in (node, *branches) if branches
                              for name in part.get("properties") or {})
        if never := [name for name in names if unsatisfiable({"allOf": [node, {"required": [name]}]})]:
            yield path, never


def check_satisfiable(tool: ToolDefinition) -> Iterable[Finding]:
    """One check of the whole schema in the usual case: with every property required (values
    valid then are valid as it is); the schema as it is and its properties one by one are
    checked only when that fails, to say what fails."""
    schema = tool.parameters
    if not isinstance(schema, Mapping) or not unsatisfiable(_requiring_all(schema)):
        return
    whole = unsatisfiable(schema)
    culprits = _culprits(schema)
    for name, path, why in culprits:
        yield Finding(
            ERROR, "unsatisfiable-schema", path,
            f"No value of '{name}' is valid: {why}. A call that gives '{name}' is always refused, "
            "and if it is required, every call is.",
            "Relax the schema so that the values the API takes pass: merge the allOf into one object "
            "listing every property, fix the bounds or the enum. Check it by trying one call in the "
            "console.",
        )
    if whole and not culprits:
        yield Finding(
            ERROR, "unsatisfiable-schema", "parameters",
            f"No arguments are valid: {whole}. Every call is refused before it is sent.",
            "Relax the parameters schema so that the arguments the API takes pass (e.g. merge the allOf "
            "into one object listing every property).",
        )
    elif not whole and not culprits:
        for path, never in _never_accepted(schema):
            # the property's name, "tasks[]" for the items of tasks
            which = f"value of '{path.replace('/items', '[]').rsplit('/', 1)[-1]}'" if path else "arguments"
            yield Finding(
                ERROR, "unsatisfiable-schema", f"parameters{path}/allOf",
                f"No valid {which} can hold {', '.join(never)}: the allOf's closed objects each forbid "
                "the others' properties, so a call that gives one is always refused.",
                "Merge the allOf into one object listing every property (additionalProperties: false on it).",
            )
