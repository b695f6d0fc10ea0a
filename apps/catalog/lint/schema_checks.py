"""Checks of what a model reads: the parameters' schema, the description, writes' safety,
and how close a tool is to its neighbours."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from apps.common.executor_kinds import executor_kind

from ..definitions import path_placeholders
from .findings import ERROR, WARNING, Finding, ToolDefinition

# Field names whose values are almost always one of a few: they deserve an enum.
CLOSED_SET_NAMES = frozenset(
    {"status", "state", "type", "kind", "sort", "sort_by", "order", "order_by", "direction", "unit",
     "granularity", "currency", "interval", "period", "mode", "category", "priority", "level", "channel"}
)
_CLOSED_SET_SUFFIXES = ("_status", "_state", "_type", "_kind", "_unit", "_currency", "_granularity")
# Parameters that hand the model an implementation: an injection surface, not a business action.
IMPLEMENTATION_NAMES = frozenset(
    {"sql", "raw_sql", "where", "where_clause", "raw_filter", "raw_query", "filter_expression", "url", "uri",
     "endpoint", "command", "cmd", "shell", "script", "eval", "exec"}
)
_PASSTHROUGH_NAMES = frozenset({"query", "q", "filter", "filters"})
_PASSTHROUGH_WORDS = re.compile(
    r"\b(sql|syntax|expression|lucene|elasticsearch|raw|passed (straight )?through|graphql|jql|cql)\b",
    re.IGNORECASE,
)
# Whose data a call touches: never taken from the model (principle 10).
IDENTITY_NAMES = frozenset(
    {"user_id", "tenant_id", "account_id", "customer_id", "org_id", "organization_id", "owner_id",
     "member_id"}
)
_LIMIT_WORDS = re.compile(r"\d|\bat most\b|\bup to\b|\bno more than\b|\bmaximum\b|\blimit|\bonly\b|\bone of\b"
                          r"|\bsingle\b|\bat least\b", re.IGNORECASE)
_WHEN_NOT_WORDS = re.compile(r"\bdo not\b|\bdon't\b|\bnot for\b|\bnever\b|\binstead\b|\bnot to\b"
                             r"|\bonly when\b|\bavoid\b|\bunless\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z][a-z0-9]+")
_STOP_WORDS = frozenset(
    "the a an and or of to in on for by with at from as is are be it its this that these those use used when "
    "not do does any all one each user users current given only can will may must which what their them "
    "than then also into about".split()
)
# Two descriptions sharing this share of their words (Jaccard) read as the same tool.
OVERLAP_THRESHOLD = 0.6



def objects_in(schema: Any, path: str) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """Every object schema inside `schema` (itself included), with its path."""
    if not isinstance(schema, Mapping):
        return
    if schema.get("type") == "object" or "properties" in schema:
        yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from objects_in(sub, f"{path}/properties/{name}")
    if isinstance(schema.get("additionalProperties"), Mapping):  # a map's values
        yield from objects_in(schema["additionalProperties"], f"{path}/additionalProperties")
    if isinstance(schema.get("items"), Mapping):
        yield from objects_in(schema["items"], f"{path}/items")
    for key in ("$defs", "definitions"):
        for name, sub in (schema.get(key) or {}).items():
            yield from objects_in(sub, f"{path}/{key}/{name}")


# Keywords that say what a value is for without constraining it.
_ANNOTATIONS = frozenset({"description", "title", "examples", "default", "$comment", "deprecated", "readOnly",
                          "writeOnly"})


def _open_object(tool: ToolDefinition, path: str, node: Mapping[str, Any]) -> Iterable[Finding]:
    """An object whose additionalProperties is not false. With properties (and always as the
    arguments themselves) a misspelled field is accepted and ignored. Without properties it is
    a map whose keys are data (Stripe's `metadata`): no field name to misspell, so a map whose
    values have a schema is fine, and one whose values are unconstrained is a warning."""
    values = node.get("additionalProperties", True)
    if "properties" in node or path == "parameters":
        yield Finding(
            ERROR, "extra-properties-allowed", path,
            "Without additionalProperties: false a misspelled or invented field is silently accepted "
            "and ignored, so the call means something other than the model thinks.",
            'Add "additionalProperties": false to this object.',
        )
    elif isinstance(values, Mapping) and set(values) - _ANNOTATIONS:
        return
    # A bare {"type": "object"} written by hand is most often an object whose fields were not
    # listed; an import's is the document's own free-form value (Twilio's AddOnsData).
    elif "additionalProperties" not in node and not tool.imported:
        yield Finding(
            ERROR, "extra-properties-allowed", path,
            "This object lists no properties and does not say what else it takes: any field is "
            "accepted, a misspelled one included, and the model learns none of their names.",
            'List its properties and add "additionalProperties": false; if its keys are data (a map such as '
            'metadata), give the schema of its values in additionalProperties, e.g. {"type": "string"}.',
        )
    else:
        yield Finding(
            WARNING, "free-form-map", path,
            "This object accepts any key with any value: the model learns its shape only from the "
            "description, and whatever it sends goes to the upstream as it is.",
            'Give the schema of its values in additionalProperties (e.g. {"type": "string"}), or list its '
            'properties with "additionalProperties": false if the API documents them.',
        )


def check_objects(tool: ToolDefinition) -> Iterable[Finding]:
    for path, node in objects_in(tool.parameters, "parameters"):
        if node.get("additionalProperties") is not False:
            yield from _open_object(tool, path, node)
        if tool.strict:
            required = set(node.get("required") or ())
            optional = [name for name in node.get("properties") or {} if name not in required]
            if optional:
                yield Finding(
                    ERROR, "optional-in-strict", path,
                    f"This tool is strict but {', '.join(sorted(optional))} "
                    f"{'is' if len(optional) == 1 else 'are'} optional: a missing field silently changes "
                    "the call's meaning through a server default.",
                    "List every property in required (give a default in the description, e.g. 'use 20'), "
                    "or untick strict.",
                )


def properties_in(schema: Any, path: str) -> Iterable[tuple[str, str, Mapping[str, Any]]]:
    for object_path, node in objects_in(schema, path):
        for name, sub in (node.get("properties") or {}).items():
            if isinstance(sub, Mapping):
                yield name, f"{object_path}/properties/{name}", sub


def _is_free_string(node: Mapping[str, Any]) -> bool:
    types = node.get("type")
    is_string = types == "string" or (isinstance(types, list) and "string" in types)
    return is_string and not any(k in node for k in ("enum", "const", "format", "pattern", "$ref"))


_OWN_FIELD = (" The imported document describes it as the API's own field, so this is a warning to check, "
              "not an error.")


def _the_apis_own(tool: ToolDefinition, name: str, path: str, node: Mapping[str, Any]) -> bool:
    """Whether an imported version's document presents this field as the API's own rather
    than a handle on ToolHub's: the document describes it, it names the resource in the path,
    or it sits inside a body object (a webhook's `config.url`). Hand-written versions: never."""
    if not tool.imported:
        return False
    in_path = name in path_placeholders(str((tool.executor_config or {}).get("path", "")))
    nested = path != f"parameters/properties/{name}"
    return in_path or nested or bool(str(node.get("description") or "").strip())


def check_properties(tool: ToolDefinition) -> Iterable[Finding]:
    bound = set(tool.context_bindings)
    top_level = set((tool.parameters.get("properties") or {}) if isinstance(tool.parameters, Mapping) else ())
    for name, path, node in properties_in(tool.parameters, "parameters"):
        lowered = name.lower()
        if not str(node.get("description") or "").strip() and name not in bound:
            yield Finding(
                WARNING, "undescribed-parameter", path,
                "The model can only learn a field's meaning, units and limits from its description.",
                "Describe what the field means, its unit or format, and its limits.",
            )
        if _is_free_string(node) and (lowered in CLOSED_SET_NAMES or lowered.endswith(_CLOSED_SET_SUFFIXES)):
            yield Finding(
                WARNING, "closed-set-as-free-text", path,
                f"'{name}' is free text but almost certainly one of a few values: a model will send "
                "variants ('not cancelled', 'Paid') that match nothing, silently.",
                "Give it an enum of the allowed values.",
            )
        own = _the_apis_own(tool, name, path, node)
        if lowered in IMPLEMENTATION_NAMES or (
            lowered in _PASSTHROUGH_NAMES and _PASSTHROUGH_WORDS.search(str(node.get("description") or ""))
        ):
            yield Finding(
                WARNING if own else ERROR, "implementation-parameter", path,
                f"'{name}' hands the model an implementation detail (a query language, a URL, a command): "
                "an injection surface instead of a business action."
                + (_OWN_FIELD if own else ""),
                f"Check what a model may put in '{name}' (which hosts, which commands) and narrow it with an "
                "enum or a pattern, or take it out of the parameters; publish once that is acceptable."
                if own else "Replace it with the business fields it stands for (status, date range, ...), "
                "each validated, and build the query on the server.",
            )
        if lowered in IDENTITY_NAMES and not (name in bound and name in top_level):
            bind = (f'bind it to the session in context_bindings, e.g. {{"{name}": {{"source": '
                    '"session.subject", "policy": "must_match"}}')
            yield Finding(
                WARNING if own else ERROR, "identity-not-bound", path,
                f"'{name}' says whose data the call touches; taken from the model, any user can act "
                "for any other (the most common privilege escalation)." + (_OWN_FIELD if own else ""),
                f"Check whose record '{name}' names: if it is the end user's (or their tenant's), {bind}; "
                "if it is a record of the API the model may pick, say so in the description."
                if own else f"{bind[0].upper()}{bind[1:]}.",
            )


def check_description(tool: ToolDefinition) -> Iterable[Finding]:
    text = tool.description or ""
    if not _LIMIT_WORDS.search(text):
        yield Finding(
            WARNING, "description-without-limits", "description",
            "The model learns limits (how many, how far back, which range) only from the description.",
            "Say the limits in words, e.g. 'at most 100 results, default 20; dates at most 90 days apart'.",
        )
    if not _WHEN_NOT_WORDS.search(text):
        yield Finding(
            WARNING, "description-without-when-not", "description",
            "Without saying when not to use it, a model reaches for this tool for near-miss tasks.",
            "Add a sentence like 'Do not use it to ...; use other_tool for that.'",
        )


def check_write_safety(tool: ToolDefinition) -> Iterable[Finding]:
    if tool.side_effect != "write":
        return
    if not tool.timeout_s:
        yield Finding(
            ERROR, "write-without-timeout", "timeout_s",
            "A write without a timeout can hang forever, holding its outcome unknown.",
            "Set a timeout a little above the external system's usual answer time.",
        )
    config = tool.executor_config or {}
    # Each executor kind declares which config key gives a write its reconcile path.
    declared = executor_kind(tool.executor)
    hook_key = declared.reconcile_key if declared else ""
    how = (declared.reconcile_how if declared else "") or "an executor kind that can reconcile a write"
    if not hook_key or not config.get(hook_key):
        yield Finding(
            WARNING, "write-without-reconcile", "executor_config",
            "After a timeout nobody can find out whether this write happened: every unknown outcome "
            "lands in the triage queue for a person.",
            f"Give it a reconcile path: {how}.",
        )


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP_WORDS and len(w) > 2}


def description_overlap(a: str, b: str) -> float:
    """Jaccard similarity of the descriptions' meaningful words (0 to 1)."""
    words_a, words_b = _words(a), _words(b)
    if not words_a or not words_b:
        return 0.0
    return len(words_a & words_b) / len(words_a | words_b)


def check_overlap(tool: ToolDefinition, others: Sequence[ToolDefinition]) -> Iterable[Finding]:
    for other in others:
        if other.name == tool.name:
            continue
        overlap = description_overlap(tool.description, other.description)
        if overlap >= OVERLAP_THRESHOLD:
            yield Finding(
                WARNING, "overlapping-tools", "description",
                f"Its description shares {overlap:.0%} of its words with {other.name}'s: a model will "
                "confuse the two (near-synonym tools are worse than many tools).",
                f"Say in one sentence how it differs from {other.name}, or merge the two tools.",
            )
