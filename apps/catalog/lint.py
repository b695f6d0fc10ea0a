"""Lint of tool definitions: what will make a model misuse a tool, found before it is published.

Pure: every check reads `ToolDefinition`s (plain values) and returns `Finding`s; loading
them from the database is `apps/catalog/selectors.py`. Errors block publishing
(`version_publish`); warnings and notes are shown on the version page and by
`manage.py lint_tools`. Each finding says where, why it matters and how to fix it
(docs/principles.md is the why behind most of them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .definitions import BODYLESS_METHODS, DEFAULT_HTTP_METHOD, path_placeholders, platform_settings_named
from .normalizers import STRING_OPS, normalize_value

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITY_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}

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
DEFAULT_MAX_TOOLSET_TOOLS = 12
DEFAULT_MAX_TOOLSET_TOKENS = 4000


@dataclass(frozen=True)
class Finding:
    """One problem of a definition: how bad, where, why it matters, how to fix it."""

    severity: str
    code: str
    field: str
    why: str
    fix: str
    tool: str = ""

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def as_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "code": self.code, "tool": self.tool, "field": self.field,
                "why": self.why, "fix": self.fix}


@dataclass(frozen=True)
class ToolDefinition:
    """What lint reads of one tool version."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    strict: bool = True
    side_effect: str = "readonly"
    executor: str = "python"
    executor_config: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float | None = 10.0
    context_bindings: Mapping[str, Any] = field(default_factory=dict)
    number: int = 1
    normalizers: Mapping[str, Any] = field(default_factory=dict)
    platform_owned: bool = True  # a shared-catalog tool, not a tenant's

    @property
    def tool_name(self) -> str:  # what apps/catalog/exports.py calls the name
        return self.name


@dataclass(frozen=True)
class Deployment:
    """What lint knows of the deployment a version would run in: the platform's secrets and
    URL settings by name, and the egress policy's verdict on a URL (None: allowed)."""

    secrets: frozenset[str] = frozenset()
    url_settings: Mapping[str, str] = field(default_factory=dict)
    egress_refusal: Callable[[str], str | None] = field(default=lambda url: None)


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.is_error for f in findings)


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.tool, f.field, f.code))


def lint_tool(
    tool: ToolDefinition, *, others: Sequence[ToolDefinition] = (), deployment: Deployment | None = None
) -> list[Finding]:
    """Every finding of one tool version; `others` are the tools a model may see beside it.
    With `deployment`, also whether its executor can run there (secrets, URL, egress)."""
    findings = [
        *_check_objects(tool),
        *_check_properties(tool),
        *_check_description(tool),
        *_check_write_safety(tool),
        *_check_overlap(tool, others),
        *_check_normalizers(tool),
        *_check_http_mapping(tool),
    ]
    if deployment is not None:
        findings += [*_check_platform_settings(tool, deployment), *_check_egress(tool, deployment)]
    return sorted_findings(Finding(**{**f.__dict__, "tool": tool.name}) for f in findings)


def lint_toolset(
    name: str,
    tools: Sequence[ToolDefinition],
    *,
    max_tools: int = DEFAULT_MAX_TOOLSET_TOOLS,
    max_tokens: int = DEFAULT_MAX_TOOLSET_TOKENS,
    tokens_of: Callable[[ToolDefinition], int] | None = None,
) -> list[Finding]:
    """Findings of a toolset as a whole: its size and what its definitions cost per request."""
    where = f"toolset {name}"
    findings = []
    if len(tools) > max_tools:
        findings.append(Finding(
            WARNING, "toolset-too-large", where,
            f"{len(tools)} tools (limit {max_tools}): the more tools a model sees, the more often it picks "
            "a wrong one, and every definition is paid for in tokens on every request.",
            "Split the toolset into phases so that each step shows only the tools it needs.",
        ))
    if tokens_of is not None and tools:
        total = sum(tokens_of(tool) for tool in tools)
        over = total > max_tokens
        findings.append(Finding(
            WARNING if over else INFO, "toolset-tokens", where,
            f"The definitions cost about {total} tokens per request (OpenAI format)"
            + (f", over the budget of {max_tokens}." if over else f", within the budget of {max_tokens}."),
            "Shorten descriptions, drop rarely used tools, or split the toolset into phases."
            if over else "Nothing to do; keep an eye on it as tools are added.",
        ))
    return findings


# ---------------------------------------------------------------------------------------
# Checks of one tool


def _objects(schema: Any, path: str) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """Every object schema inside `schema` (itself included), with its path."""
    if not isinstance(schema, Mapping):
        return
    if schema.get("type") == "object" or "properties" in schema:
        yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from _objects(sub, f"{path}/properties/{name}")
    if isinstance(schema.get("items"), Mapping):
        yield from _objects(schema["items"], f"{path}/items")
    for key in ("$defs", "definitions"):
        for name, sub in (schema.get(key) or {}).items():
            yield from _objects(sub, f"{path}/{key}/{name}")


def _check_objects(tool: ToolDefinition) -> Iterable[Finding]:
    for path, node in _objects(tool.parameters, "parameters"):
        if node.get("additionalProperties") is not False:
            yield Finding(
                ERROR, "extra-properties-allowed", path,
                "Without additionalProperties: false a misspelled or invented field is silently accepted "
                "and ignored, so the call means something other than the model thinks.",
                'Add "additionalProperties": false to this object.',
            )
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


def _properties(schema: Any, path: str) -> Iterable[tuple[str, str, Mapping[str, Any]]]:
    for object_path, node in _objects(schema, path):
        for name, sub in (node.get("properties") or {}).items():
            if isinstance(sub, Mapping):
                yield name, f"{object_path}/properties/{name}", sub


def _is_free_string(node: Mapping[str, Any]) -> bool:
    types = node.get("type")
    is_string = types == "string" or (isinstance(types, list) and "string" in types)
    return is_string and not any(k in node for k in ("enum", "const", "format", "pattern", "$ref"))


def _check_properties(tool: ToolDefinition) -> Iterable[Finding]:
    bound = set(tool.context_bindings)
    top_level = set((tool.parameters.get("properties") or {}) if isinstance(tool.parameters, Mapping) else ())
    for name, path, node in _properties(tool.parameters, "parameters"):
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
        if lowered in IMPLEMENTATION_NAMES or (
            lowered in _PASSTHROUGH_NAMES and _PASSTHROUGH_WORDS.search(str(node.get("description") or ""))
        ):
            yield Finding(
                ERROR, "implementation-parameter", path,
                f"'{name}' hands the model an implementation detail (a query language, a URL, a command): "
                "an injection surface instead of a business action.",
                "Replace it with the business fields it stands for (status, date range, ...), each "
                "validated, and build the query on the server.",
            )
        if lowered in IDENTITY_NAMES and not (name in bound and name in top_level):
            yield Finding(
                ERROR, "identity-not-bound", path,
                f"'{name}' says whose data the call touches; taken from the model, any user can act "
                "for any other (the most common privilege escalation).",
                f'Bind it to the session in context_bindings, e.g. {{"{name}": {{"source": '
                '"session.subject", "policy": "must_match"}}.',
            )


def _check_description(tool: ToolDefinition) -> Iterable[Finding]:
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


def _check_write_safety(tool: ToolDefinition) -> Iterable[Finding]:
    if tool.side_effect != "write":
        return
    if not tool.timeout_s:
        yield Finding(
            ERROR, "write-without-timeout", "timeout_s",
            "A write without a timeout can hang forever, holding its outcome unknown.",
            "Set a timeout a little above the external system's usual answer time.",
        )
    config = tool.executor_config or {}
    hook = config.get("reconcile") if tool.executor == "python" else config.get("status_path")
    reconcilable = bool(hook)
    if not reconcilable:
        how = ('a "reconcile" callable in executor_config' if tool.executor == "python"
               else 'a "status_path" in executor_config (the upstream\'s status endpoint by idempotency key)')
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


def _check_overlap(tool: ToolDefinition, others: Sequence[ToolDefinition]) -> Iterable[Finding]:
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


# ---------------------------------------------------------------------------------------
# Normalizers: they run before the schema check, to turn a sloppy value into an accepted one.


def _string_schema(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The schema of the strings a normalizer of this field reaches (a list's items too);
    None when the field can hold no string. A node that does not say its type may."""
    types = node.get("type")
    if types is None:
        return node
    types = types if isinstance(types, list) else [types]
    if "string" in types:
        return node
    items = node.get("items")
    if "array" in types and isinstance(items, Mapping):
        return _string_schema(items)
    return None


def _sloppy_forms(value: str) -> list[str]:
    """Values a model might send for `value`: the inputs a normalizer exists to fix."""
    return [
        f" {value} ", value.upper(), value.lower(), value.title(), value.swapcase(), value.replace("-", "/")
    ]


def _check_normalizers(tool: ToolDefinition) -> Iterable[Finding]:
    properties = (tool.parameters.get("properties") or {}) if isinstance(tool.parameters, Mapping) else {}
    for name, ops in (tool.normalizers or {}).items():
        node = properties.get(name)
        string_ops = [op for op in ops if op in STRING_OPS] if isinstance(ops, list) else []
        if not isinstance(node, Mapping) or not string_ops:
            continue
        path = f"normalizers/{name}"
        strings = _string_schema(node)
        if strings is None:
            yield Finding(
                WARNING, "normalizer-without-effect", path,
                f"{', '.join(string_ops)} only ever change strings, and '{name}' holds none: the normalizer "
                "never changes a value (normalizers never change a value's JSON type).",
                f"Remove the normalizer of '{name}', or make the field a string if that is what it holds.",
            )
            continue
        allowed = [strings["const"]] if "const" in strings else strings.get("enum")
        if not isinstance(allowed, list) or not all(isinstance(v, str) for v in allowed):
            continue
        broken = [v for v in allowed if normalize_value(v, string_ops) not in allowed]
        if broken:
            yield Finding(
                WARNING, "normalizer-refuses-valid-values", path,
                f"{' then '.join(string_ops)} turns {broken[0]!r}, an allowed value of '{name}', into "
                f"{normalize_value(broken[0], string_ops)!r}, which the schema refuses: every call with "
                "it fails.",
                "Use the normalizer that produces the allowed spelling (e.g. lower for lower-case values), "
                "or remove it.",
            )
        elif not any(
            sloppy != value and normalize_value(sloppy, string_ops) == value
            for value in allowed
            for sloppy in _sloppy_forms(value)
        ):
            yield Finding(
                WARNING, "normalizer-without-effect", path,
                f"{' then '.join(string_ops)} cannot turn any value a model would send into one of the "
                f"allowed values of '{name}': the normalizer changes nothing that matters.",
                "Remove it, or declare the normalizer that fixes how models misspell these values.",
            )


def _check_http_mapping(tool: ToolDefinition) -> Iterable[Finding]:
    """An http version's request mapping against its parameters: what is never sent, what a
    call may lack, and a body where servers drop it."""
    config = tool.executor_config or {}
    if tool.executor != "http" or not isinstance(tool.parameters, Mapping):
        return
    properties = tool.parameters.get("properties") or {}
    required = set(tool.parameters.get("required") or ())
    method = str(config.get("method", DEFAULT_HTTP_METHOD))
    body = config.get("body", None if method in BODYLESS_METHODS else "rest")
    in_path = path_placeholders(str(config.get("path", "")))
    for name in in_path:
        if name in properties and name not in required:
            yield Finding(
                WARNING, "optional-path-parameter", f"parameters/properties/{name}",
                f"'{name}' fills a part of the path, but a call may leave it out: such a call is refused "
                "with nothing sent.",
                f"Add '{name}' to required.",
            )
    if body == "rest":
        sent = set(properties)
    else:
        sent = {*in_path, *(config.get("query") or ()), *(config.get("headers") or {}).values(),
                *(body if isinstance(body, list) else ())}
    if unsent := sorted(set(properties) - sent):
        yield Finding(
            WARNING, "argument-never-sent", "executor_config",
            f"{', '.join(unsent)} {'is' if len(unsent) == 1 else 'are'} in the parameters but the request "
            f"mapping sends {'it' if len(unsent) == 1 else 'them'} nowhere: the model fills a field that "
            "changes nothing, or the upstream misses what it needs.",
            "Name it in the path, query, headers or body of executor_config, or remove it from the "
            "parameters.",
        )
    if method in ("GET", "HEAD") and body is not None:
        yield Finding(
            WARNING, "body-on-get", "executor_config/body",
            f"A {method} request with a body: many servers and proxies drop it, so these arguments "
            "may never arrive.",
            'Send them as query parameters ("query") and remove "body".',
        )


def _check_platform_settings(tool: ToolDefinition, deployment: Deployment) -> Iterable[Finding]:
    named = platform_settings_named(executor=tool.executor, executor_config=tool.executor_config)
    if named and not tool.platform_owned:
        yield Finding(
            ERROR, "platform-setting-in-tenant-tool", "executor_config",
            f"A tenant's tool names platform settings ({', '.join(sorted(named))}): its curators could "
            "send the platform's credentials to any host. Only shared-catalog tools may name them.",
            'Give the full "url" and no secret_ref, or ask an operator for a shared tool.',
        )
        return
    if "secret_ref" in named and named["secret_ref"] not in deployment.secrets:
        yield Finding(
            ERROR, "unknown-secret-ref", "executor_config/secret_ref",
            f"TOOLHUB_SECRETS has no secret named {named['secret_ref']!r}: every call would fail "
            "before sending.",
            "Name a secret the platform has (settings TOOLHUB_SECRETS, spelled exactly), or have an "
            "operator add it first.",
        )
    if "url_setting" in named and named["url_setting"] not in deployment.url_settings:
        yield Finding(
            ERROR, "unknown-url-setting", "executor_config/url_setting",
            f"No setting named {named['url_setting']!r} holds an http(s) URL: every call would fail "
            "before sending.",
            'Name a setting that holds the provider\'s URL (spelled exactly), or give the full "url".',
        )


def _check_egress(tool: ToolDefinition, deployment: Deployment) -> Iterable[Finding]:
    config = tool.executor_config or {}
    if tool.executor != "http":
        return
    url = config.get("url") or deployment.url_settings.get(str(config.get("url_setting")))
    if not isinstance(url, str) or not (refusal := deployment.egress_refusal(url)):
        return
    yield Finding(
        ERROR, "egress-refused", "executor_config",
        f"The egress policy refuses this tool's URL: {refusal}. Every call would be refused with "
        "nothing sent.",
        "Use the provider's public host, or have an operator name the host in TOOLHUB_EGRESS_ALLOW.",
    )
