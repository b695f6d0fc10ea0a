"""What the version page previews of a definition: the model-format exports with their token
estimates (apps/catalog/exports.py) and the changes from the previous version."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .exports import estimate_tokens, export_tool
from .lint import ToolDefinition

# The vendor formats curators compare, in the order shown.
PREVIEW_FORMATS = (("openai", "OpenAI"), ("anthropic", "Anthropic"), ("mcp", "MCP"))


@dataclass(frozen=True)
class ExportPreview:
    format: str
    label: str
    tool: dict[str, Any]
    tokens: int

    @property
    def text(self) -> str:
        return json.dumps(self.tool, indent=2, ensure_ascii=False)


def export_previews(definition: ToolDefinition) -> list[ExportPreview]:
    """The definition as each vendor's API takes it, with token estimates."""
    previews = []
    for fmt, label in PREVIEW_FORMATS:
        exported = export_tool(definition, fmt)
        previews.append(ExportPreview(fmt, label, exported, estimate_tokens(exported)))
    return previews


def token_estimator() -> Callable[[ToolDefinition], int]:
    """Tokens of a definition in the OpenAI format (what lint budgets)."""
    return lambda definition: estimate_tokens(export_tool(definition, "openai"))


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
