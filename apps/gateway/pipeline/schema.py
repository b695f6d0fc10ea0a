"""Stage 3: check the normalized arguments against the JSON Schema, and teach what is allowed.

The schema the model saw is a hint; this check is the guarantee. Every violation is listed
(a model fixes all of them in one retry instead of one per round trip), and the hint quotes
what is allowed: enum values, patterns with an example, bounds, types, the known fields.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator

from apps.common.errors import ErrorDetail, InvalidArgsError, UnavailableError
from apps.common.schemas.patterns import FORMAT_CHECKER, ToolSchemaValidator, schema_pattern_problems, search
from apps.gateway.contracts import VersionSpec, thaw
from apps.gateway.pipeline.examples import DATE_EXAMPLE, KNOWN_PATTERN_EXAMPLES
from apps.gateway.pipeline.memo import RevisionMemo, revision_key
from apps.gateway.pipeline.repairs import missing_repair, schema_repair
from apps.gateway.text import clip, field_label, join_names, pointer, quote

# Building a validator costs far more than using a built one: build once per revision.
VALIDATOR_CACHE_SIZE = 512
MAX_DETAILS = 50
MAX_HINT_PARTS = 8

_validators: RevisionMemo[Validator] = RevisionMemo(VALIDATOR_CACHE_SIZE)

_FORMAT_PHRASES = {
    "date": f"a real date as YYYY-MM-DD (e.g. {DATE_EXAMPLE})",
    "date-time": "a date and time in ISO 8601 (e.g. 2026-01-31T09:30:00Z)",
    "time": "a time in ISO 8601 (e.g. 09:30:00Z)",
    "email": "an email address (e.g. ana@example.com)",
    "uuid": "a UUID (e.g. 123e4567-e89b-12d3-a456-426614174000)",
    "ipv4": "an IPv4 address (e.g. 192.0.2.1)",
    "ipv6": "an IPv6 address (e.g. 2001:db8::1)",
}
_TYPE_PHRASES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "object": "an object",
    "array": "an array",
    "null": "null",
}
_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    type(None): "null",
}


def validation_schema(version: VersionSpec) -> dict[str, Any]:
    """The version's parameters, with context-bound fields no longer required.

    Bound fields stay in `properties`: the session fills them after this stage, and a value
    the model sends anyway must still have the right type.
    """
    schema: dict[str, Any] = thaw(version.parameters)
    bound = set(version.context_bindings)
    if bound and isinstance(schema.get("required"), list):
        schema["required"] = [name for name in schema["required"] if name not in bound]
    return schema


def _unusable(version: VersionSpec, problem: str) -> UnavailableError:
    return UnavailableError(
        f"{version.tool_name} v{version.number} cannot be called: its parameters schema {problem}.",
        hint="This is a problem in the tool's definition, not in your call: do not retry. "
        "Use another tool or tell the user this action is unavailable for now.",
    )


def compiled_validator(version: VersionSpec) -> Validator:
    """The validator of this version's revision, built on first use and kept in memory.

    Raises UnavailableError when the stored schema is not valid JSON Schema, or has a
    pattern RE2 cannot run (a curator's mistake that slipped past the save-time check):
    nothing runs unvalidated.
    """
    key = revision_key(version, lambda: [thaw(version.parameters), sorted(version.context_bindings)])
    return _validators.get_or_build(key, lambda: _built_validator(version))


def _built_validator(version: VersionSpec) -> Validator:
    schema = validation_schema(version)
    try:
        ToolSchemaValidator.check_schema(schema)
    except SchemaError:
        raise _unusable(version, "is not valid JSON Schema") from None
    if schema_pattern_problems(schema):
        # Stored before patterns were checked on save: never matched by a backtracking engine.
        raise _unusable(version, "has patterns ToolHub cannot match in linear time")
    built: Validator = ToolSchemaValidator(schema, format_checker=FORMAT_CHECKER)
    return built


def validate_arguments(arguments: Mapping[str, Any], version: VersionSpec) -> None:
    """Raises InvalidArgsError listing every violation of the version's schema."""
    instance = arguments if isinstance(arguments, dict) else dict(arguments)
    validator = compiled_validator(version)
    errors = sorted(
        validator.iter_errors(instance),
        key=lambda e: ([str(p) for p in e.absolute_path], str(e.validator)),
    )
    if not errors:
        return
    explainer = _Explainer(bound=frozenset(version.context_bindings), validator=validator)
    for error in errors:
        explainer.explain(error)
    details = explainer.details
    labels = list(dict.fromkeys(explainer.labels))
    if len(details) == 1:
        message = f"Invalid arguments for {version.tool_name}: {labels[0]}: {details[0].problem}."
    else:
        message = (
            f"Invalid arguments for {version.tool_name}: {len(details)} problems ({join_names(labels)})."
        )
    parts = explainer.hints
    hint = "; ".join(parts[:MAX_HINT_PARTS])
    if len(parts) > MAX_HINT_PARTS:
        hint += f"; and {len(parts) - MAX_HINT_PARTS} more (see details)"
    raise InvalidArgsError(
        message,
        hint=f"Fix the arguments and call again: {hint}.",
        details=details[:MAX_DETAILS],
    )


class _Explainer:
    """Turns jsonschema errors into details (one per place) and hint parts (one per rule)."""

    def __init__(self, *, bound: frozenset[str], validator: Validator) -> None:
        self.bound = bound
        self.validator = validator
        self.details: list[ErrorDetail] = []
        self.hints: list[str] = []
        self.labels: list[str] = []
        self._seen: set[tuple[str, str]] = set()

    def add(
        self, path: Sequence[str | int], problem: str, hint: str, repair: Mapping[str, Any] | None = None
    ) -> None:
        where = pointer(path)
        if (where, problem) not in self._seen:
            self._seen.add((where, problem))
            self.details.append(ErrorDetail(path=where, problem=problem, repair=repair or {}))
            self.labels.append(field_label(path))
        if hint not in self.hints:
            self.hints.append(hint)

    def passes(self, schema: Mapping[str, Any], value: Any) -> bool:
        """Whether `value` passes the subschema `schema` ($refs resolve against the whole)."""
        return bool(self.validator.evolve(schema=schema).is_valid(value))

    def explain(self, error: ValidationError) -> None:
        path = list(error.absolute_path)
        schema = error.schema if isinstance(error.schema, Mapping) else {}
        keyword = str(error.validator)
        value = error.validator_value
        # Errors from iter_errors always carry the instance checked (never jsonschema's unset).
        instance: Any = error.instance
        label = field_label(path)
        # The same fix as data, for a program that never reads the hint.
        repair = schema_repair(keyword, schema, instance, value, self.passes)
        if keyword == "required":
            self._missing(path, schema, instance, value)
        elif keyword in ("additionalProperties", "unevaluatedProperties"):
            self._unknown(path, schema, instance)
        elif keyword == "type":
            expected = _type_phrase(value)
            self.add(
                path,
                f"expected {expected}, got {_json_type(instance)}",
                f"{label} must be {expected}{_type_tip(value, instance)}",
                repair,
            )
        elif keyword == "enum":
            self.add(
                path,
                f"{quote(instance)} is not one of the allowed values",
                f"{label} must be one of: {_values(value)}",
                repair,
            )
        elif keyword == "const":
            problem = f"{quote(instance)} is not the allowed value"
            self.add(path, problem, f"{label} must be {quote(value)}", repair)
        elif keyword == "pattern":
            example = _example(schema)
            self.add(
                path,
                f"{quote(instance)} does not match {clip(str(value))}",
                f"{label} must match {clip(str(value))}" + (f" (e.g. {example})" if example else ""),
                repair,
            )
        elif keyword == "format":
            phrase = _FORMAT_PHRASES.get(str(value), f"a valid {value}")
            self.add(path, f"{quote(instance)} is not a valid {value}", f"{label} must be {phrase}", repair)
        elif keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            problem = f"{quote(instance)} is out of range"
            self.add(path, problem, f"{label} must be {_number_bounds(schema)}", repair)
        elif keyword in ("minLength", "maxLength"):
            self.add(
                path,
                f"has {len(instance)} characters",
                f"{label} must be {_bounds(schema, 'minLength', 'maxLength')} characters long",
                repair,
            )
        elif keyword in ("minItems", "maxItems"):
            self.add(
                path,
                f"has {len(instance)} items",
                f"{label} must have {_bounds(schema, 'minItems', 'maxItems')} items",
                repair,
            )
        elif keyword in ("minProperties", "maxProperties"):
            self.add(
                path,
                f"has {len(instance)} fields",
                f"{label} must have {_bounds(schema, 'minProperties', 'maxProperties')} fields",
                repair,
            )
        elif keyword == "multipleOf":
            self.add(
                path,
                f"{quote(instance)} is not a multiple of {value}",
                f"{label} must be a multiple of {value}",
                repair,
            )
        elif keyword == "uniqueItems":
            self.add(path, "has repeated items", f"{label} must not repeat items", repair)
        elif keyword in ("anyOf", "oneOf") and isinstance(value, list):
            options = " or ".join(_describe(option) for option in value[:6])
            self.add(
                path, f"{quote(instance)} matches none of the allowed forms", f"{label} must be {options}",
                repair,
            )
        else:
            problem = clip(error.message, 160)
            self.add(path, problem, f"fix {label}: {problem}", repair)

    def _missing(
        self, path: list[str | int], schema: Mapping[str, Any], instance: Any, required: Any
    ) -> None:
        if not isinstance(instance, Mapping) or not isinstance(required, list):
            return
        missing = [name for name in required if name not in instance]
        properties = schema.get("properties") or {}
        described = [f"{name} ({_describe(properties.get(name, True))})" for name in missing]
        where = f" to {field_label(path)}" if path else ""
        hint = f"add the missing fields{where}: {'; '.join(described)}"
        for name in missing:
            field = [*path, name]
            repair = missing_repair(field, properties.get(name), self.passes)
            self.add(field, "required field is missing", hint, repair)

    def _unknown(self, path: list[str | int], schema: Mapping[str, Any], instance: Any) -> None:
        if not isinstance(instance, Mapping):
            return
        properties = list(schema.get("properties") or {})
        patterns = list(schema.get("patternProperties") or {})
        unknown = [
            key for key in instance if key not in properties and not any(search(p, key) for p in patterns)
        ]
        # The model never saw session-bound fields; listing them would invite it to send them.
        allowed = [name for name in properties if path or name not in self.bound]
        named = []
        for key in unknown:
            close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.75)
            named.append(f"{clip(key, 40)} (did you mean {close[0]}?)" if close else clip(key, 40))
        where = f" from {field_label(path)}" if path else ""
        hint = f"remove unknown fields{where}: {join_names(named)}"
        hint += f"; allowed fields: {join_names(allowed, limit=30)}" if allowed else ""
        for key in unknown:
            self.add([*path, key], "unknown field", hint, {"unexpected": pointer([*path, key])})


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _type_phrase(expected: Any) -> str:
    names = expected if isinstance(expected, list) else [expected]
    return " or ".join(_TYPE_PHRASES.get(str(n), str(n)) for n in names)


def _type_tip(expected: Any, instance: Any) -> str:
    """The quoting slip models make most: numbers sent as strings and the other way round."""
    names = set(expected if isinstance(expected, list) else [expected])
    if isinstance(instance, str) and names & {"integer", "number"}:
        try:
            number = json.loads(instance.strip())
        except ValueError:
            return ""
        if isinstance(number, int | float) and not isinstance(number, bool):
            return f" (send {clip(instance.strip(), 20)}, not {quote(instance, 24)})"
    if isinstance(instance, int | float) and not isinstance(instance, bool) and "string" in names:
        return f' (send "{instance}", in quotes)'
    return ""


def _values(values: Any) -> str:
    items = values if isinstance(values, list) else [values]
    return join_names((v if isinstance(v, str) else quote(v) for v in items), limit=30)


def _example(schema: Mapping[str, Any]) -> str:
    """A value the field accepts: the schema's own example, or one for a well-known pattern."""
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return clip(str(examples[0]), 40)
    return KNOWN_PATTERN_EXAMPLES.get(str(schema.get("pattern", "")), "")


def _bounds(schema: Mapping[str, Any], low_key: str, high_key: str) -> str:
    low, high = schema.get(low_key), schema.get(high_key)
    if low is not None and high is not None:
        return f"between {low} and {high}"
    if low is not None:
        return f"at least {low}"
    return f"at most {high}"


def _number_bounds(schema: Mapping[str, Any]) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f"between {low} and {high}"
    parts = []
    if low is not None:
        parts.append(f"at least {low}")
    elif schema.get("exclusiveMinimum") is not None:
        parts.append(f"greater than {schema['exclusiveMinimum']}")
    if high is not None:
        parts.append(f"at most {high}")
    elif schema.get("exclusiveMaximum") is not None:
        parts.append(f"less than {schema['exclusiveMaximum']}")
    return " and ".join(parts)


def _describe(schema: Any) -> str:
    """A short phrase for what a subschema accepts, as used in hints."""
    if not isinstance(schema, Mapping):
        return "any value"
    if "const" in schema:
        return f"exactly {quote(schema['const'])}"
    if "enum" in schema:
        return f"one of: {_values(schema['enum'])}"
    base = _type_phrase(schema["type"]) if "type" in schema else "a value"
    if schema.get("format") in _FORMAT_PHRASES:
        return _FORMAT_PHRASES[schema["format"]]
    extras = []
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
        extras.append(_number_bounds(schema))
    if "minLength" in schema or "maxLength" in schema:
        extras.append(f"{_bounds(schema, 'minLength', 'maxLength')} characters long")
    if "pattern" in schema:
        example = _example(schema)
        extras.append(f"matching {clip(str(schema['pattern']))}" + (f", e.g. {example}" if example else ""))
    return " ".join([base, " and ".join(extras)]) if extras else base
