"""Pure checks of a tool version's declarative parts, run on every save.

A curator's mistake must surface as a clear message on the version page, never as a
crash in the invoke path. Each part has a small JSON Schema of its own; the `parameters`
schema must itself be valid Draft 2020-12, with patterns RE2 can match in linear time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from apps.common.executor_kinds import ExecutorKindDeclaration, executor_kind
from apps.common.rule_types import RULE_TYPES
from apps.common.schemas.normalizers import NORMALIZER_OPS
from apps.common.schemas.patterns import schema_pattern_problems

from .annotations import ANNOTATION_TYPES
from .http_config import wire_problems

BINDING_POLICIES = ("must_match", "overwrite")
DEFAULT_HTTP_METHOD = "POST"
# Without a "body" in the config these send none; the others send the arguments left over.
BODYLESS_METHODS = frozenset({"GET", "HEAD", "DELETE"})
# `{name}` in an http version's path: filled from the argument `name`.
PATH_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
STATUS_PATH_PLACEHOLDER = "idempotency_key"
DEFAULT_IDEMPOTENCY_HEADER = "Idempotency-Key"
# Headers an argument may not set: the transport's own, and credentials (never from arguments).
RESERVED_HEADERS = frozenset(
    {"host", "accept", "content-length", "content-type", "transfer-encoding", "connection", "te", "upgrade",
     "trailer", "expect", "keep-alive", "proxy-connection", "authorization", "proxy-authorization", "cookie"}
)

_NORMALIZERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {
        "type": "array",
        "items": {"enum": list(NORMALIZER_OPS)},
        "uniqueItems": True,
    },
}
_BINDINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "properties": {
            "source": {"type": "string", "pattern": r"^session\.(subject|attributes\.[A-Za-z0-9_]+)$"},
            "policy": {"enum": list(BINDING_POLICIES)},
        },
        "required": ["source", "policy"],
        "additionalProperties": False,
    },
}
_HINT = {"type": "string", "minLength": 1}
_RULE_SCHEMAS: dict[str, dict[str, Any]] = {
    "date_order": {
        "properties": {"start": {"type": "string"}, "end": {"type": "string"}, "hint": _HINT},
        "required": ["start", "end"],
    },
    "max_span": {
        "properties": {
            "start": {"type": "string"}, "end": {"type": "string"},
            "max_days": {"type": "integer", "minimum": 1}, "hint": _HINT,
        },
        "required": ["start", "end", "max_days"],
    },
    "task_budget": {
        "properties": {"max_calls": {"type": "integer", "minimum": 1}, "hint": _HINT},
        "required": ["max_calls"],
    },
    "daily_quota": {
        "properties": {"max_calls": {"type": "integer", "minimum": 1}, "hint": _HINT},
        "required": ["max_calls"],
    },
    "requires_earlier_call": {
        "properties": {"tool": {"type": "string"}, "hint": _HINT},
        "required": ["tool"],
    },
    # `field` may be at most a limit read from the outside world before the rules run, by the
    # registered state reader `reader` (apps/gateway/state.py): what is left to refund, say.
    "state_limit": {
        "properties": {"field": {"type": "string"}, "reader": {"type": "string", "minLength": 1},
                       "hint": _HINT},
        "required": ["field", "reader"],
    },
    "custom": {
        "properties": {"callable": {"type": "string"}, "hint": _HINT},
        "required": ["callable"],
    },
}
_RULES_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"enum": list(RULE_TYPES)}},
        "allOf": [
            {
                "if": {"properties": {"type": {"const": name}}},
                "then": {
                    **schema,
                    "properties": {"type": {}, **schema["properties"]},
                    "additionalProperties": False,
                },
            }
            for name, schema in _RULE_SCHEMAS.items()
        ],
    },
}
# executor_config keys that name something of the platform's settings (a secret, a URL).
PLATFORM_SETTING_KEYS = ("secret_ref", "url_setting")
_APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "always": {"type": "boolean"},
        "field": {"type": "string"},
        "above": {"type": "number"},
        "expires_s": {"type": "integer", "minimum": 60},
    },
    "dependentRequired": {"field": ["above"], "above": ["field"]},
    "additionalProperties": False,
}

_META_VALIDATORS = {
    name: Draft202012Validator(schema)
    for name, schema in {
        "normalizers": _NORMALIZERS_SCHEMA,
        "context_bindings": _BINDINGS_SCHEMA,
        "rules": _RULES_SCHEMA,
        "approval": _APPROVAL_SCHEMA,
    }.items()
}


# Each declared kind's config schema, compiled once (again only if the kind is declared anew).
_CONFIG_VALIDATORS: dict[str, tuple[ExecutorKindDeclaration, Draft202012Validator]] = {}


def _config_validator(declared: ExecutorKindDeclaration) -> Draft202012Validator:
    cached = _CONFIG_VALIDATORS.get(declared.kind)
    if cached is None or cached[0] is not declared:
        cached = _CONFIG_VALIDATORS[declared.kind] = (declared, Draft202012Validator(declared.config_schema))
    return cached[1]


def _problems(validator_name: str, value: Any) -> list[str]:
    return _errors(_META_VALIDATORS[validator_name], value)


def _errors(validator: Draft202012Validator, value: Any) -> list[str]:
    return [
        f"{'/' + '/'.join(str(p) for p in e.absolute_path) if e.absolute_path else '(top)'}: "
        f"{e.message}"
        for e in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    ]


def _object_schema_problems(schema: Any, *, not_json_object: str, not_an_object: str) -> list[str]:
    """Problems with a schema that must be a valid Draft 2020-12 schema of an object, whose
    patterns RE2 can match; the two messages say, in the field's own words, what it is not."""
    if not isinstance(schema, dict):
        return [not_json_object]
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        return [f"Not a valid JSON Schema (Draft 2020-12) at {where}: {exc.message}"]
    if schema.get("type") != "object":
        return [not_an_object]
    return schema_pattern_problems(schema)


def check_parameters_schema(parameters: Any) -> list[str]:
    """Problems with a parameters schema: it must be a valid Draft 2020-12 object schema."""
    return _object_schema_problems(
        parameters,
        not_json_object="The parameters schema must be a JSON object.",
        not_an_object='The parameters schema must have "type": "object" at the top.',
    )


def check_output_schema(output_schema: Any) -> list[str]:
    """Problems with an output schema: empty (none declared), or a valid Draft 2020-12 schema
    of an object, as MCP's outputSchema must be, whose patterns RE2 can match."""
    if output_schema == {}:
        return []
    return _object_schema_problems(
        output_schema,
        not_json_object="The output schema must be a JSON object (or empty: none declared).",
        not_an_object='The output schema must have "type": "object" at the top (MCP\'s outputSchema '
        "describes an object); leave it empty for a tool whose result is not one.",
    )


def check_annotations(annotations: Any) -> list[str]:
    """Problems with a version's MCP annotations: only MCP's keys, each of its JSON type."""
    if not isinstance(annotations, dict):
        return ["The annotations must be a JSON object."]
    unknown = sorted(set(annotations) - set(ANNOTATION_TYPES))
    wrong = sorted(
        k for k, v in annotations.items() if k in ANNOTATION_TYPES and not isinstance(v, ANNOTATION_TYPES[k])
    )
    problems = []
    if unknown:
        problems.append(f"Unknown annotations: {', '.join(unknown)}; known: {', '.join(ANNOTATION_TYPES)}.")
    if wrong:
        problems.append(f"Of the wrong type (title is text, the hints true or false): {', '.join(wrong)}.")
    return problems


def validate_definition(
    *,
    parameters: Any,
    normalizers: Any,
    context_bindings: Any,
    rules: Any,
    executor: str,
    executor_config: Any,
    approval: Any,
    output_schema: Any = None,
    annotations: Any = None,
) -> dict[str, list[str]]:
    """Every problem of a version's definition, keyed by model field; empty when sound."""
    errors: dict[str, list[str]] = {}
    if problems := check_parameters_schema(parameters):
        errors["parameters"] = problems
    if problems := check_output_schema({} if output_schema is None else output_schema):
        errors["output_schema"] = problems
    if problems := check_annotations({} if annotations is None else annotations):
        errors["annotations"] = problems
    for field, value in (
        ("normalizers", normalizers),
        ("context_bindings", context_bindings),
        ("rules", rules),
        ("approval", approval),
    ):
        if problems := _problems(field, value):
            errors[field] = problems
    # An executor kind no executor declared is the `executor` field's error (not a choice).
    declared = executor_kind(executor)
    if declared is not None and (problems := _errors(_config_validator(declared), executor_config)):
        errors["executor_config"] = problems
    if "parameters" not in errors:
        known = set(parameters.get("properties", {}))
        unknown = _referenced_fields(normalizers, context_bindings, rules, approval) - known
        if unknown:
            errors.setdefault("parameters", []).append(
                "Fields named by normalizers, bindings, rules or approval are not in the "
                f"schema's properties: {', '.join(sorted(unknown))}."
            )
        if declared is not None and declared.config_problems and "executor_config" not in errors and (
            problems := declared.config_problems(executor_config=executor_config, parameters=parameters)
        ):
            errors["executor_config"] = problems
    return errors


def path_placeholders(template: str) -> list[str]:
    """The names of a path template's `{name}` placeholders, in order."""
    return PATH_PLACEHOLDER.findall(template)


def path_problems(path: str) -> list[str]:
    """Why `path` (a template or a filled path) could send a request elsewhere than under
    its base URL, which it is pasted after: empty when it only adds segments under the
    base's path (a fixed query after `?` is fine)."""
    if not path:
        return []
    problems = []
    if not path.startswith(("/", "?")):
        problems.append("it does not start with '/', so it would change the base's host name or port")
    route = path.partition("?")[0]
    # A server may decode %2F and %5C before splitting, and some read '\' as '/'.
    parts = [part for segment in route.split("/") for part in re.split(r"[/\\]", unquote(segment))]
    if "." in parts or ".." in parts:
        problems.append(
            f"it has a {'..' if '..' in parts else '.'!r} segment (maybe percent-encoded), which "
            "climbs out of the base's path"
        )
    if "\\" in route:
        problems.append("it holds '\\', which some servers read as '/'")
    if "#" in path:
        problems.append("it holds '#', after which nothing is sent")
    if any(char.isspace() or not char.isprintable() for char in path):
        problems.append("it holds a space or control character")
    return problems


def _path_refusal(key: str, path: str) -> list[str]:
    if problems := path_problems(path):
        return [
            f"{key} {path!r} would leave the upstream's base URL: {'; '.join(problems)}. A path only "
            "adds segments under the base's path, e.g. '/orders/{order_id}'."
        ]
    return []


def _stray_brace(template: str) -> bool:
    rest = PATH_PLACEHOLDER.sub("", template)
    return "{" in rest or "}" in rest


def http_mapping_problems(*, executor_config: Mapping[str, Any], parameters: Mapping[str, Any]) -> list[str]:
    """How an http version's request mapping disagrees with its parameters: every argument it
    names must be a property of the schema, and the templates must be well formed."""
    known = set(parameters.get("properties", {}))
    path = str(executor_config.get("path", ""))
    status_path = str(executor_config.get("status_path", ""))
    problems = [*_path_refusal("path", path), *_path_refusal("status_path", status_path)]
    if _stray_brace(path):
        problems.append(f"path {path!r} has a brace outside a {{name}} placeholder.")
    if missing := [name for name in path_placeholders(path) if name not in known]:
        problems.append(
            f"path {path!r} names {', '.join(missing)}, which the parameters schema does not have: "
            "each {name} of the path is filled from the argument of that name."
        )
    if _stray_brace(status_path) or set(path_placeholders(status_path)) - {STATUS_PATH_PLACEHOLDER}:
        problems.append(
            f"status_path {status_path!r} may hold no placeholder but {{{STATUS_PATH_PLACEHOLDER}}}."
        )
    body = executor_config.get("body")
    for key, listed in (
        ("query", executor_config.get("query") or []),
        ("headers", list((executor_config.get("headers") or {}).values())),
        ("body", body if isinstance(body, list) else []),
    ):
        if missing := [name for name in listed if name not in known]:
            problems.append(
                f"{key} names {', '.join(missing)}, which the parameters schema does not have."
            )
    idempotency_header = str(executor_config.get("idempotency_header", DEFAULT_IDEMPOTENCY_HEADER))
    reserved = RESERVED_HEADERS | {idempotency_header.lower()}
    if refused := [h for h in executor_config.get("headers") or {} if h.lower() in reserved]:
        problems.append(
            f"headers cannot set {', '.join(refused)} from arguments: the transport sets it, or it "
            "carries a credential or the idempotency key, which never come from arguments."
        )
    if idempotency_header.lower() in RESERVED_HEADERS:
        problems.append(f"idempotency_header cannot be {idempotency_header}: HTTP or credentials use it.")
    return problems + wire_problems(executor_config, parameters, path_placeholders(path))


def platform_settings_named(*, executor: str, executor_config: Any) -> dict[str, str]:
    """The platform settings a version's config names, by key (for http: `secret_ref`,
    `url_setting`; each kind declares its own)."""
    declared = executor_kind(executor)
    if declared is None or not isinstance(executor_config, Mapping):
        return {}
    keys = declared.platform_setting_keys
    return {key: str(executor_config[key]) for key in keys if executor_config.get(key)}


def platform_settings_problems(*, executor: str, executor_config: Any, platform_owned: bool) -> list[str]:
    """The platform-secrets rule: settings (secrets, URLs) are named only by versions of
    platform-owned tools (the shared catalog). A tenant's tool brings its own URL and no
    platform credential, or its curators could send the platform's secrets anywhere."""
    named = platform_settings_named(executor=executor, executor_config=executor_config)
    if platform_owned or not named:
        return []
    listed = ", ".join(f"{key} {value!r}" for key, value in named.items())
    return [
        f"This tool belongs to a tenant, so its versions cannot name platform settings ({listed}): "
        "only shared-catalog tools, curated by the platform's operators, may use the platform's "
        'secrets and URL settings. Give the full "url" instead, and ask an operator for a '
        "shared tool if the call needs a platform credential."
    ]


def _referenced_fields(normalizers: Any, bindings: Any, rules: Any, approval: Any) -> set[str]:
    fields: set[str] = set()
    if isinstance(normalizers, dict):
        fields |= set(normalizers)
    if isinstance(bindings, dict):
        fields |= set(bindings)
    if isinstance(rules, list):
        for rule in rules:
            if isinstance(rule, dict):
                fields |= {rule[k] for k in ("start", "end", "field") if isinstance(rule.get(k), str)}
    if isinstance(approval, dict) and isinstance(approval.get("field"), str):
        fields.add(approval["field"])
    return fields
