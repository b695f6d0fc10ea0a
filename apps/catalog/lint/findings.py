"""What lint reads and says: a tool version as plain values, the deployment it would run
in, and a finding (how bad, where, why it matters, how to fix it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITY_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}
# ToolVersion.source["kind"] of the versions an import makes (apps/imports/openapi_services.py and
# mcp_services.py).
IMPORT_KINDS = frozenset({"openapi", "mcp"})


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
    # What an importer made the version from (ToolVersion.source); empty for one written by hand.
    source: Mapping[str, Any] = field(default_factory=dict)
    output_schema: Mapping[str, Any] = field(default_factory=dict)
    annotations: Mapping[str, Any] = field(default_factory=dict)

    @property
    def imported(self) -> bool:
        """Made by an import: its fields are the document's (or the MCP server's) own."""
        return self.source.get("kind") in IMPORT_KINDS

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


