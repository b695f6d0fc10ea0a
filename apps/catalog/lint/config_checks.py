"""Checks of what a version does with its arguments: its normalizers (they run before the
schema check) and its http executor's config (the request mapping, platform settings and
the egress policy)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apps.common.schemas.normalizers import STRING_OPS, normalize_value

from ..definitions import (
    BODYLESS_METHODS,
    DEFAULT_HTTP_METHOD,
    path_placeholders,
    path_problems,
    platform_settings_named,
)
from .findings import ERROR, WARNING, Deployment, Finding, ToolDefinition


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


def check_normalizers(tool: ToolDefinition) -> Iterable[Finding]:
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


def check_http_mapping(tool: ToolDefinition) -> Iterable[Finding]:
    """An http version's request mapping against its parameters: a path that leaves the base
    URL (saving refuses it; a row stored before the rule still has it), what is never sent,
    what a call may lack, and a body where servers drop it."""
    config = tool.executor_config or {}
    if tool.executor != "http" or not isinstance(tool.parameters, Mapping):
        return
    for key in ("path", "status_path"):
        if problems := path_problems(str(config.get(key, ""))):
            yield Finding(
                ERROR, "path-leaves-base", f"executor_config/{key}",
                f"{key} {config[key]!r} would send the request, with the upstream's credential, "
                f"elsewhere than under its base URL: {'; '.join(problems)}. Calls are refused with "
                "nothing sent.",
                "Make it a path under the base URL: start with '/', no '.' or '..' segments, e.g. "
                "'/orders/{order_id}'.",
            )
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
                *(config.get("cookies") or {}).values(), *(body if isinstance(body, list) else ()),
                *([body["argument"]] if isinstance(body, dict) else ())}
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


def check_session_scope(tool: ToolDefinition) -> Iterable[Finding]:
    """An http version whose path names a record by an id the model chooses, with nothing of
    the call taken from the session: the upstream answers for any record, whoever asks."""
    config = tool.executor_config or {}
    if tool.executor != "http" or tool.context_bindings:
        return
    placeholders = path_placeholders(str(config.get("path", "")))
    ids = [name for name in placeholders if name == "id" or name.endswith("_id")]
    if not ids:
        return
    named = ", ".join(f"any {name}" for name in ids)
    yield Finding(
        WARNING, "session-unscoped-path", "executor_config/path",
        f"The path takes {named} the model sends, and nothing in the call comes from the session: the "
        "upstream answers for every record, another user's too, whoever the end user is.",
        "Bind the field that says whose record it is to the session in context_bindings (e.g. user_id "
        'from "session.subject", sent where the upstream checks it), or use a per-user credential so '
        "the upstream checks ownership; until then keep the tool unpublished.",
    )


def check_platform_settings(tool: ToolDefinition, deployment: Deployment) -> Iterable[Finding]:
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


def check_egress(tool: ToolDefinition, deployment: Deployment) -> Iterable[Finding]:
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
