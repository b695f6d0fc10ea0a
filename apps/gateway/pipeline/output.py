"""A result's structured content: the data of a version that declares an output schema,
checked against it. Pure: no ORM, no network, no clock.

MCP clients take a tool's `structuredContent` as conforming to the `outputSchema` it listed
(the official SDK's client refuses one that does not). What an upstream answers is not ours
to vouch for (principle 18), so the data is handed over as structured only when it matches:

- an `ok` envelope's `data`, whole (a truncated result is cut to fit the model's budget, so
  it is no longer the object the schema describes), and an `empty` envelope's `raw` (an
  object whose lists are empty is still a valid result);
- anything else (an error, a pending or accepted call, a dry run, a result that is not an
  object or does not match) has no structured content: the caller answers the text content
  only, and says why in its log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator

from apps.common.schemas.patterns import FORMAT_CHECKER, ToolSchemaValidator, schema_pattern_problems
from apps.gateway.contracts import VersionSpec, thaw
from apps.gateway.pipeline.memo import RevisionMemo, revision_key

# Built once per version revision, like the arguments' validators (schema.py).
OUTPUT_VALIDATOR_CACHE_SIZE = 512

_validators: RevisionMemo[Validator | None] = RevisionMemo(OUTPUT_VALIDATOR_CACHE_SIZE)


@dataclass(frozen=True)
class StructuredResult:
    """The structured content of one result (None: text only), and why it has none."""

    content: dict[str, Any] | None
    problem: str = ""


def output_validator(version: VersionSpec) -> Validator | None:
    """The validator of this version's output schema, built on first use and kept in memory;
    None when the stored schema is unusable (not valid JSON Schema, or a pattern RE2 cannot
    run: a mistake that slipped past the save-time check), so nothing passes as structured."""
    key = revision_key(version, lambda: [thaw(version.output_schema)])
    return _validators.get_or_build(key, lambda: _built_validator(thaw(version.output_schema)))


def _built_validator(schema: Any) -> Validator | None:
    try:
        ToolSchemaValidator.check_schema(schema)
    except SchemaError:
        return None
    if schema_pattern_problems(schema):
        return None
    built: Validator = ToolSchemaValidator(schema, format_checker=FORMAT_CHECKER)
    return built


def _result_of(envelope: Mapping[str, Any]) -> tuple[Any, str]:
    """The result an envelope carries whole, or why it carries none."""
    status = envelope.get("status")
    if status == "ok" and not envelope.get("dry_run") and not envelope.get("truncated"):
        return envelope.get("data"), ""
    if status == "ok":
        return None, "the result was truncated" if envelope.get("truncated") else "a dry run has no result"
    if status == "empty":
        return envelope.get("raw"), ""
    return None, f"a {status} envelope has no result"


def structured_result(version: VersionSpec, envelope: Mapping[str, Any]) -> StructuredResult:
    """The structured content of `envelope`, a result of `version`, which declares an output
    schema; none (with the problem) for a result that is not the object the schema describes."""
    result, problem = _result_of(envelope)
    if problem:
        return StructuredResult(None, problem)
    if not isinstance(result, dict):
        return StructuredResult(None, "the result is not an object")
    validator = output_validator(version)
    if validator is None:
        return StructuredResult(None, "the version's output schema cannot be used")
    error = next(iter(validator.iter_errors(result)), None)
    if error is not None:
        # The path and the keyword only: the message would quote the result's values into logs.
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        return StructuredResult(None, f"the result does not match the output schema at {where} "
                                      f"(keyword {error.validator})")
    return StructuredResult(result)
