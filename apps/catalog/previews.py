"""What the version page previews of a definition: the model-format exports with their token
estimates (apps/catalog/exports.py) and the changes from the previous version.

`apps/catalog/exports.py` is written on another branch; it is imported lazily so the admin
works (showing that the previews are not available yet) before that module is merged.
Used from it: `export_tool(tool, fmt) -> dict` and `estimate_tokens(value) -> int`, with a
tool that has tool_name, number, description, parameters, context_bindings, side_effect.
"""

from __future__ import annotations

import difflib
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .lint import ToolDefinition

# The vendor formats curators compare, in the order shown.
PREVIEW_FORMATS = (("openai", "OpenAI"), ("anthropic", "Anthropic"), ("mcp", "MCP"))


def _exports() -> ModuleType | None:
    try:
        return importlib.import_module("apps.catalog.exports")
    except ModuleNotFoundError as missing:
        if missing.name != "apps.catalog.exports":
            raise
        return None


@dataclass(frozen=True)
class ExportPreview:
    format: str
    label: str
    tool: dict[str, Any]
    tokens: int

    @property
    def text(self) -> str:
        return json.dumps(self.tool, indent=2, ensure_ascii=False)


def export_previews(definition: ToolDefinition) -> list[ExportPreview] | None:
    """The definition as each vendor's API takes it, with token estimates; None when the
    exports module is not available in this build."""
    exports = _exports()
    if exports is None:
        return None
    previews = []
    for fmt, label in PREVIEW_FORMATS:
        exported = exports.export_tool(definition, fmt)
        previews.append(ExportPreview(fmt, label, exported, exports.estimate_tokens(exported)))
    return previews


def token_estimator() -> Callable[[ToolDefinition], int] | None:
    """Tokens of a definition in the OpenAI format (what lint budgets), or None when the
    exports module is not available."""
    exports = _exports()
    if exports is None:
        return None
    return lambda definition: exports.estimate_tokens(exports.export_tool(definition, "openai"))


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "add", "remove", "hunk" or "same"
    text: str


def definition_diff(before: dict[str, Any], after: dict[str, Any], *, before_name: str,
                    after_name: str) -> list[DiffLine]:
    """A unified diff of two versions' contents as indented JSON; empty when equal."""
    def lines(content: dict[str, Any]) -> list[str]:
        return json.dumps(content, indent=2, ensure_ascii=False, sort_keys=True, default=str).splitlines()

    diff = difflib.unified_diff(lines(before), lines(after), fromfile=before_name, tofile=after_name,
                                lineterm="", n=3)
    kinds = {"+": "add", "-": "remove", "@": "hunk"}
    return [DiffLine(kinds.get(line[:1], "same"), line) for line in diff
            if not line.startswith(("+++", "---"))]
