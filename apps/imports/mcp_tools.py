"""A tool an MCP server lists (`tools/list`) as the content of a tool version draft. Pure.

- parameters: its `inputSchema`, `$ref`s inside it expanded within the import's limits
  (refs.py; a recursive one, or one past a limit, makes the tool not importable), objects
  closed (schemas.py `closed`), the server's `required` kept: an optional argument stays
  optional and admits null only where the server says so. The version is not strict (the
  curator's choice); strict exports still show every property required and optional ones
  nullable, and the validate stage drops the nulls they let a model send;
- `send_null`: the top-level arguments whose schema the server wrote admitting null. The
  executor leaves out any other null argument (principle 7: null means "leave it out"), also
  for versions imported strict before;
- side effect from its annotations, for the curator to confirm: `readOnlyHint` →
  `readonly`, otherwise (`destructiveHint` or no hint) `write`; `idempotentHint` is noted.
  A tool with neither readOnlyHint nor destructiveHint is a write that lint asks the curator
  to confirm (`side-effect-unconfirmed`);
- its annotations (MCP's keys of MCP's types only: the listing is untrusted) are kept on the
  version, listed again by ToolHub's `/mcp` with the side-effect hints ToolHub derives;
- output schema: its `outputSchema`, `$ref`s expanded like the input's, when it is an object
  schema ToolHub can check results against (drafts.result_schema); otherwise none;
- the `mcp` executor's config: the upstream and the server's name for the tool; a write's
  `idempotency_key` (or `idempotencyKey`) input becomes the version's `idempotency_argument`,
  filled by ToolHub with the ledger's key and taken out of what the model fills (like an
  OpenAPI operation's `Idempotency-Key` header).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.catalog.annotations import ANNOTATION_TYPES
from apps.common.jsontext import HazardKind, first_hazard

from .drafts import Draft, result_schema, snake_name
from .errors import Unsupported
from .limits import ImportLimitExceeded, ImportLimits, too_deep
from .openapi import operation_digest
from .refs import Expander, RefError, pointer
from .schemas import closed, json_schema
from .wire import says_null

EXECUTOR = "mcp"
IDEMPOTENCY_ARGUMENTS = ("idempotency_key", "idempotencyKey")


def definition_digest(definition: Mapping[str, Any]) -> str:
    """The digest of a tool's definition as the server listed it."""
    return operation_digest(definition)


def annotations_of(definition: Mapping[str, Any]) -> dict[str, Any]:
    annotations = definition.get("annotations")
    return dict(annotations) if isinstance(annotations, dict) else {}


def kept_annotations(definition: Mapping[str, Any]) -> dict[str, Any]:
    """The server's annotations a version keeps: MCP's keys, each of its type (title trimmed)."""
    kept = {key: value for key, value in annotations_of(definition).items()
            if key in ANNOTATION_TYPES and isinstance(value, ANNOTATION_TYPES[key])}
    if isinstance(title := kept.get("title"), str):
        kept["title"] = title.strip()[:200]
    return {key: value for key, value in kept.items() if value != ""}


def _output_schema(definition: Mapping[str, Any], limits: ImportLimits) -> dict[str, Any]:
    schema = definition.get("outputSchema")
    if not isinstance(schema, dict):
        return {}
    try:
        resolved = Expander(schema, limits=limits).expand(schema, "")
    except (RefError, ImportLimitExceeded):
        return {}
    return result_schema(resolved, is_30=False)


def definition_problem(definition: Mapping[str, Any], *, limits: ImportLimits) -> str:
    """Why ToolHub cannot store the definition as listed (a NUL, a lone surrogate, a number
    that is not finite, nesting past the limit), naming where; "" when it can."""
    hazard = first_hazard(dict(definition), max_depth=limits.max_depth, exact_integers=False)
    if hazard is None:
        return ""
    where = pointer(hazard.path) or "/"
    if hazard.kind == HazardKind.TOO_DEEP:
        return f"its definition at {where} is {too_deep(limits.max_depth)}"
    return f"its definition cannot be stored: at {where}, {hazard.problem}."


def _input_schema(definition: Mapping[str, Any], limits: ImportLimits) -> dict[str, Any]:
    schema = definition.get("inputSchema")
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    try:
        resolved = Expander(schema, limits=limits).expand(schema, "")
    except (RefError, ImportLimitExceeded) as exc:
        raise Unsupported(f"its inputSchema at {exc.where or '/'}: {exc.problem}") from None
    converted = json_schema(resolved, is_30=False)
    if not (isinstance(converted, dict) and converted.get("type", "object") == "object"):
        raise Unsupported("its inputSchema is not an object schema.")
    return {**converted, "type": "object", "properties": converted.get("properties") or {}}


def draft_of_tool(
    definition: Mapping[str, Any], *, upstream: str, limits: ImportLimits | None = None
) -> Draft:
    """The draft content of one listed tool, calling it on `upstream`. Raises Unsupported,
    also for a definition ToolHub cannot store or past the import's `limits`."""
    limits = limits or ImportLimits.from_settings()
    if problem := definition_problem(definition, limits=limits):
        raise Unsupported(problem)
    name = str(definition["name"])
    annotations = annotations_of(definition)
    title = str(definition.get("title") or annotations.get("title") or "").strip()
    description = str(definition.get("description") or "").strip()
    side_effect = "readonly" if annotations.get("readOnlyHint") is True else "write"
    schema = _input_schema(definition, limits)
    config: dict[str, Any] = {"upstream": upstream, "tool": name}
    if side_effect == "write":
        for argument in IDEMPOTENCY_ARGUMENTS:
            if argument in schema["properties"]:
                schema = _without(schema, argument)
                config["idempotency_argument"] = argument
                break
    if nullable := [pointer([prop]) for prop, sub in schema["properties"].items() if says_null(sub)]:
        config["send_null"] = nullable
    return Draft(
        name=snake_name(name),
        summary=(title or description.split("\n")[0] or name)[:200],
        description=description or f"Calls the tool {name} of {upstream}.",
        parameters=closed(schema),
        side_effect=side_effect,
        executor_config=config,
        output_schema=_output_schema(definition, limits),
        annotations=kept_annotations(definition),
    )


def _without(schema: dict[str, Any], argument: str) -> dict[str, Any]:
    """`schema` without the property `argument`, which ToolHub fills itself."""
    properties = {k: v for k, v in schema["properties"].items() if k != argument}
    out = {**schema, "properties": properties}
    if isinstance(schema.get("required"), list):
        out["required"] = [name for name in schema["required"] if name != argument]
    return out


def hints_note(definition: Mapping[str, Any]) -> str:
    """What the server's annotations say about the tool's effects, for the changelog."""
    annotations = annotations_of(definition)
    hints = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
    said = [f"{hint}={annotations[hint]}" for hint in hints if hint in annotations]
    return f"The server's hints: {', '.join(said)}." if said else "The server gave no hints about effects."
