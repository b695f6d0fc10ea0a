"""What the model sees of a tool, in each vendor's format (contract §2). Pure functions.

Every export starts from the model's view of a version's schema: context-bound fields
(filled from the session) are removed from `properties` and `required`. Then each format
keeps what its vendor accepts:

- `openai`: strict function calling. Every object has `additionalProperties: false` and
  lists every property in `required`; an optional property becomes a union with null.
  Kept: type, enum, const, anyOf, $ref/$defs, pattern, the formats OpenAI lists, numeric
  bounds, minItems/maxItems. Everything else (allOf, not, if/then/else, dependent*, string
  lengths, defaults, ...) is unsupported. Source: OpenAI, "Structured Outputs → Supported
  schemas" (platform.openai.com/docs/guides/structured-outputs#supported-schemas).
- `anthropic`: the subset of strict tool use. Anthropic documents no numeric constraints
  (minimum, maximum, multipleOf), no string constraints (minLength, maxLength; only simple
  patterns), and minItems only as 0 or 1; objects need `additionalProperties: false`.
  Source: Anthropic, "Structured outputs → JSON Schema limitations"
  (docs.claude.com/en/docs/build-with-claude/structured-outputs#json-schema-limitations).
  Like Anthropic's own SDK (`anthropic.lib._parse._transform.transform_schema`), patterns
  move into the description too: a pattern's regex dialect is not guaranteed to compile.
- `mcp`: MCP's `inputSchema` takes plain JSON Schema; nothing is dropped. The version's
  `outputSchema` when it declares one, and `annotations` (annotations.py): the hints
  about side effects derived from the reviewed side-effect class, whatever an import said.
- `toolhub`: ToolHub's own listing, with the version, side-effect class, output schema (when
  declared) and the token estimate of each tool.

A constraint a format cannot carry moves into the description (e.g. "1 to 100") so the
model can still follow it; the gateway always validates against the full stored schema.

Token estimates are an approximation: characters of the compact JSON divided by four
(rounded up), the rule of thumb OpenAI and Anthropic both give for English text. Real
counts depend on the model's tokenizer and the vendor's own wrapping of tool definitions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from apps.common.schemas.nulls import allows_null

from .annotations import mcp_annotations

FORMATS = ("openai", "anthropic", "mcp", "toolhub")
CHARS_PER_TOKEN = 4

# Keywords that carry no constraint and that strict subsets may refuse: dropped silently.
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$anchor", "$comment", "title", "deprecated", "readOnly", "writeOnly", "$vocabulary"}
)
_OPENAI_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_ANTHROPIC_FORMATS = _OPENAI_FORMATS | {"uri"}


class Exportable(Protocol):
    """What an export needs of a tool version (a gateway VersionSpec has all of it)."""

    @property
    def tool_name(self) -> str: ...

    @property
    def number(self) -> int: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> Mapping[str, Any]: ...

    @property
    def context_bindings(self) -> Mapping[str, Any]: ...

    @property
    def side_effect(self) -> str: ...

    @property
    def output_schema(self) -> Mapping[str, Any]: ...

    @property
    def annotations(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class _Profile:
    """How one strict subset treats a schema node."""

    carried: frozenset[str]
    formats: frozenset[str]
    keeps_all_of: bool
    all_required: bool
    min_items: frozenset[int] | None = None  # None: any minItems is carried if in `carried`


_OPENAI = _Profile(
    carried=frozenset(
        {
            "pattern",
            "multipleOf",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "minItems",
            "maxItems",
        }
    ),
    formats=_OPENAI_FORMATS,
    keeps_all_of=False,
    all_required=True,
)
_ANTHROPIC = _Profile(
    carried=frozenset({"minItems"}),
    formats=_ANTHROPIC_FORMATS,
    keeps_all_of=True,
    all_required=False,
    min_items=frozenset({0, 1}),
)
_PROFILES = {"openai": _OPENAI, "anthropic": _ANTHROPIC}


@dataclass(frozen=True)
class ToolExport:
    """One agent's tools in one format, with their token estimates."""

    format: str
    tools: list[dict[str, Any]]
    token_estimates: dict[str, int] = field(default_factory=dict)
    # Per code-run tool (run_python): its estimate beside that of listing its tools one by one.
    code_runs: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def token_estimate(self) -> int:
        return sum(self.token_estimates.values())


def _plain(value: Any) -> Any:
    """A deep, mutable JSON copy (versions hold read-only mappings and tuples)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def estimate_tokens(value: Any) -> int:
    """Approximate tokens of `value` as compact JSON: characters / 4, rounded up."""
    return math.ceil(len(_compact(value)) / CHARS_PER_TOKEN)


def model_schema(tool: Exportable) -> dict[str, Any]:
    """The version's parameters as the model may fill them: bound fields removed."""
    schema: dict[str, Any] = _plain(tool.parameters)
    bound = set(tool.context_bindings)
    if not bound:
        return schema
    if isinstance(schema.get("properties"), dict):
        schema["properties"] = {k: v for k, v in schema["properties"].items() if k not in bound}
    if isinstance(schema.get("required"), list):
        schema["required"] = [name for name in schema["required"] if name not in bound]
    return schema


# ---------------------------------------------------------------------------------------
# Constraints as words


def _number(value: Any) -> str:
    return _compact(value)


def _range_phrase(low: Any, high: Any, unit: str = "") -> str:
    suffix = f" {unit}" if unit else ""
    if low is not None and high is not None:
        return f"{_number(low)} to {_number(high)}{suffix}"
    if low is not None:
        return f"at least {_number(low)}{suffix}"
    return f"at most {_number(high)}{suffix}"


_PAIRS = (
    ("minimum", "maximum", ""),
    ("minLength", "maxLength", "characters"),
    ("minItems", "maxItems", "items"),
)
_PHRASES = {
    "exclusiveMinimum": lambda v: f"greater than {_number(v)}",
    "exclusiveMaximum": lambda v: f"less than {_number(v)}",
    "multipleOf": lambda v: f"a multiple of {_number(v)}",
    "pattern": lambda v: f"must match the regular expression {v}",
    "format": lambda v: f"format {v}",
    "uniqueItems": lambda v: "items must be unique" if v else "",
    "default": lambda v: f"default {_compact(v)}",
    "examples": lambda v: "e.g. " + ", ".join(_compact(x) for x in v) if isinstance(v, list) else "",
    "dependentRequired": lambda v: (
        "; ".join(f"with {name} also give {', '.join(others)}" for name, others in v.items())
        if isinstance(v, Mapping)
        else ""
    ),
    "not": lambda v: f"must not match {_compact(v)}",
    "allOf": lambda v: f"must match all of {_compact(v)}",
    "minProperties": lambda v: f"at least {_number(v)} keys",
    "maxProperties": lambda v: f"at most {_number(v)} keys",
}


def constraint_phrases(moved: Mapping[str, Any]) -> list[str]:
    """Readable phrases for keywords a format cannot carry, in a stable order."""
    rest = dict(moved)
    phrases = []
    for low_key, high_key, unit in _PAIRS:
        if low_key in rest or high_key in rest:
            phrases.append(_range_phrase(rest.pop(low_key, None), rest.pop(high_key, None), unit))
    for key in sorted(rest):
        phrase = _PHRASES[key](rest[key]) if key in _PHRASES else f"{key}: {_compact(rest[key])}"
        if phrase:
            phrases.append(phrase)
    return phrases


def _with_phrases(description: str | None, phrases: list[str]) -> str | None:
    """`description` followed by the phrases it does not already say."""
    said = (description or "").lower()
    phrases = [p for p in phrases if p.lower() not in said]
    if not phrases:
        return description
    note = "; ".join(phrases) + "."
    note = note[0].upper() + note[1:]
    return f"{description.rstrip()} {note}" if description else note


# ---------------------------------------------------------------------------------------
# Strict subsets


def _is_object(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """`node` also admitting null: how a strict format says "optional"."""
    if allows_null(node):
        return node
    if "$ref" in node:
        description = node.get("description")
        ref = {k: v for k, v in node.items() if k != "description"}
        wrapped: dict[str, Any] = {"anyOf": [ref, {"type": "null"}]}
        return {**wrapped, "description": description} if description else wrapped
    out = dict(node)
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = [kind, "null"]
    elif isinstance(kind, list):
        out["type"] = [*kind, "null"]
    if "const" in out:
        out["enum"] = [out.pop("const"), None]
    elif "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    if kind is None and isinstance(out.get("anyOf"), list) and not allows_null(out):
        out["anyOf"] = [*out["anyOf"], {"type": "null"}]
    return out


def _strict(node: Any, profile: _Profile, root_phrases: list[str] | None = None) -> Any:
    """One schema node in a strict subset; at the root, moved constraints go to `root_phrases`."""
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    moved: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("description", "additionalProperties") or key in _ANNOTATIONS:
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {name: _strict(sub, profile) for name, sub in value.items()}
        elif key in ("$defs", "definitions") and isinstance(value, Mapping):
            out[key] = {name: _strict(sub, profile) for name, sub in value.items()}
        elif key == "items" and isinstance(value, Mapping):
            out[key] = _strict(value, profile)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            # Neither vendor documents oneOf; anyOf is the nearest they carry (and for
            # disjoint variants the same). The gateway still checks the stored oneOf.
            out["anyOf"] = [_strict(sub, profile) for sub in value]
        elif key == "allOf" and profile.keeps_all_of and isinstance(value, list):
            out[key] = [_strict(sub, profile) for sub in value]
        elif key in ("type", "enum", "const", "$ref", "required"):
            out[key] = value
        elif key == "format" and value in profile.formats:
            out[key] = value
        elif key in profile.carried and (
            key != "minItems" or profile.min_items is None or value in profile.min_items
        ):
            out[key] = value
        else:
            moved[key] = value
    if _is_object(node):
        out["additionalProperties"] = False
        if profile.all_required:
            properties = out.setdefault("properties", {})
            required = [name for name in node.get("required") or () if name in properties]
            for name, sub in properties.items():
                if name not in required and isinstance(sub, dict):
                    properties[name] = _nullable(sub)
            # The declared order first: JSON columns may not keep the order of properties.
            out["required"] = [*required, *(name for name in properties if name not in required)]
    phrases = constraint_phrases(moved)
    if root_phrases is not None:
        root_phrases.extend(phrases)
        phrases = []
    description = _with_phrases(node.get("description"), phrases)
    if description:
        out = {"description": description, **out}
    return out


def strict_schema(schema: Mapping[str, Any], fmt: str) -> tuple[dict[str, Any], list[str]]:
    """`schema` in the strict subset of `fmt` (openai, anthropic), and the phrases of the
    top-level constraints it could not carry (they belong in the tool's description)."""
    root_phrases: list[str] = []
    return _strict(schema, _PROFILES[fmt], root_phrases), root_phrases


# ---------------------------------------------------------------------------------------
# Tools

def export_tool(tool: Exportable, fmt: str) -> dict[str, Any]:
    """One tool exactly as `fmt`'s API takes it (toolhub: ToolHub's own listing)."""
    schema = model_schema(tool)
    output_schema = _plain(tool.output_schema) if tool.output_schema else None
    if fmt == "mcp":
        listed = {"name": tool.tool_name, "description": tool.description, "inputSchema": schema}
        if output_schema is not None:
            listed["outputSchema"] = output_schema
        return {**listed, "annotations": mcp_annotations(side_effect=tool.side_effect,
                                                         annotations=tool.annotations or {})}
    if fmt == "toolhub":
        listing = {
            "name": tool.tool_name,
            "version": tool.number,
            "description": tool.description,
            "parameters": schema,
            "side_effect": tool.side_effect,
        }
        if output_schema is not None:
            listing["output_schema"] = output_schema
        return {**listing, "token_estimate": estimate_tokens(listing)}
    parameters, root_phrases = strict_schema(schema, fmt)
    description = _with_phrases(tool.description, root_phrases) or ""
    if fmt == "openai":
        return {
            "type": "function",
            "function": {
                "name": tool.tool_name,
                "description": description,
                "parameters": parameters,
                "strict": True,
            },
        }
    if fmt == "anthropic":
        return {"name": tool.tool_name, "description": description, "input_schema": parameters}
    raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")


def exported_name(exported: Mapping[str, Any]) -> str:
    return exported["function"]["name"] if "function" in exported else exported["name"]


def export_tools(tools: Iterable[Exportable], fmt: str) -> ToolExport:
    """Tools in `fmt`, in the given order, each with its token estimate."""
    exported = [export_tool(tool, fmt) for tool in tools]
    return ToolExport(
        format=fmt,
        tools=exported,
        token_estimates={exported_name(t): t.get("token_estimate") or estimate_tokens(t) for t in exported},
    )
