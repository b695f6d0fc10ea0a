"""Lint of tool definitions: what will make a model misuse a tool, found before it is published.

Pure: every check reads `ToolDefinition`s (plain values) and returns `Finding`s; loading
them from the database is `apps/catalog/selectors.py`. Errors block publishing
(`version_publish`); warnings and notes are shown on the version page and by
`manage.py lint_tools`. Each finding says where, why it matters and how to fix it
(docs/principles.md is the why behind most of them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from apps.common.builtin_tools import BUILTIN_TOOL_NAMES

from .config_checks import (
    check_egress,
    check_http_mapping,
    check_normalizers,
    check_platform_settings,
    check_session_scope,
)
from .findings import (
    ERROR,
    INFO,
    SEVERITY_ORDER,
    WARNING,
    Deployment,
    Finding,
    ToolDefinition,
    has_errors,
    sorted_findings,
)
from .review_checks import check_imported, check_optional_meaning, check_send_null, with_side_effect_confirmed
from .satisfiable import check_satisfiable
from .schema_checks import (
    check_description,
    check_objects,
    check_overlap,
    check_properties,
    check_write_safety,
    description_overlap,
)

__all__ = [
    "ERROR", "INFO", "SEVERITY_ORDER", "WARNING", "Deployment", "Finding", "ToolDefinition",
    "description_overlap", "has_errors", "lint_tool", "lint_toolset", "sorted_findings",
    "with_side_effect_confirmed",
]

DEFAULT_MAX_TOOLSET_TOOLS = 12
DEFAULT_MAX_TOOLSET_TOKENS = 4000


def lint_tool(
    tool: ToolDefinition, *, others: Sequence[ToolDefinition] = (), deployment: Deployment | None = None
) -> list[Finding]:
    """Every finding of one tool version; `others` are the tools a model may see beside it.
    With `deployment`, also whether its executor can run there (secrets, URL, egress)."""
    findings = [
        *check_name(tool),
        *check_objects(tool),
        *check_properties(tool),
        *check_satisfiable(tool),
        *check_optional_meaning(tool),
        *check_description(tool),
        *check_write_safety(tool),
        *check_overlap(tool, others),
        *check_normalizers(tool),
        *check_http_mapping(tool),
        *check_session_scope(tool),
        *check_send_null(tool),
        *check_imported(tool),
    ]
    if deployment is not None:
        findings += [*check_platform_settings(tool, deployment), *check_egress(tool, deployment)]
    return sorted_findings(Finding(**{**f.__dict__, "tool": tool.name}) for f in findings)


def check_name(tool: ToolDefinition) -> Iterator[Finding]:
    """A catalog tool cannot take a built-in tool's name (the catalog refuses it since; older
    rows may still have one)."""
    if tool.name in BUILTIN_TOOL_NAMES:
        yield Finding(
            ERROR, "reserved-name", "name",
            f"{tool.name} is the name of a tool ToolHub itself offers every agent: the built-in one "
            "answers, so this tool is never called.",
            "Rename the tool (Catalog → Tools): its versions, grants and toolsets follow the tool.",
        )


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
