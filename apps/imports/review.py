"""What a curator reviews after an import: each draft's lint findings, with those that hold
for most drafts of the import (an imported description rarely says when not to use the
tool, a write rarely has a reconcile path) said once, with the count and the tools, instead
of on every draft. The version's own lint page still lists all of its findings.

Errors are never grouped: each blocks publishing its own draft, so each draft shows its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from apps.catalog.lint import Finding
from apps.catalog.models import ToolVersion
from apps.catalog.selectors import versions_findings

# A finding is import-wide when more than this share of the import's drafts have it, and at
# least MIN_COMMON_DRAFTS do (two drafts alike are no pattern).
COMMON_SHARE = 0.5
MIN_COMMON_DRAFTS = 3
# Tools a command names for one import-wide finding.
LISTED_TOOLS = 12


class Reviewed(Protocol):
    """What the review reads of one result of an import (services.OperationResult)."""

    @property
    def tool(self) -> str: ...
    @property
    def version(self) -> ToolVersion | None: ...
    @property
    def findings(self) -> tuple[Finding, ...]: ...


R = TypeVar("R", bound=Reviewed)


def with_findings(results: Sequence[R]) -> list[R]:
    """The results with their versions read again (a publication changed them) and what lint
    finds in each."""
    pks = [r.version.pk for r in results if r.version is not None]
    versions = ToolVersion.objects.select_related("tool").in_bulk(pks)
    findings = versions_findings(versions=list(versions.values()))
    return [
        r if r.version is None else dataclasses.replace(  # type: ignore[type-var]  # a dataclass
            r, version=versions[r.version.pk], findings=tuple(findings[r.version.pk])
        )
        for r in results
    ]


@dataclass(frozen=True)
class CommonFinding:
    """A finding most drafts of one import have: said once."""

    severity: str
    code: str
    why: str
    fix: str
    tools: tuple[str, ...]
    of: int  # drafts the import made or kept

    @property
    def count(self) -> int:
        return len(self.tools)


@dataclass(frozen=True)
class ImportReview:
    common: tuple[CommonFinding, ...]

    def own(self, result: Reviewed) -> list[Finding]:
        """The findings of one result that are not import-wide."""
        grouped = {(c.code, c.severity) for c in self.common}
        return [f for f in result.findings if (f.code, f.severity) not in grouped]

    def lines(self) -> list[str]:
        """The import-wide findings as the import commands print them."""
        if not self.common:
            return []
        return ["Findings of most drafts of this import (said once here; each draft's page lists them):"] + [
            f"  {c.severity} {c.code} on {c.count} of {c.of} drafts: {c.fix}\n"
            f"      {_some(c.tools)}"
            for c in self.common
        ]


def _some(tools: tuple[str, ...]) -> str:
    """The first tools by name, and how many more: a line a terminal shows whole (the admin's
    page lists them all, folded)."""
    shown = ", ".join(tools[:LISTED_TOOLS])
    return f"{shown} and {len(tools) - LISTED_TOOLS} more" if len(tools) > LISTED_TOOLS else shown


def import_review(results: Iterable[Any]) -> ImportReview:
    """The review of an import's results (each with its findings, see with_findings)."""
    drafts = [r for r in results if r.version is not None]
    by_code: dict[tuple[str, str], list[Finding]] = {}
    for result in drafts:
        seen = set()
        for finding in result.findings:
            key = (finding.code, finding.severity)
            if finding.is_error or key in seen:
                continue
            seen.add(key)
            by_code.setdefault(key, []).append(dataclasses.replace(finding, tool=result.tool))
    common = tuple(
        CommonFinding(severity=severity, code=code, why=found[0].why, fix=found[0].fix,
                      tools=tuple(f.tool for f in found), of=len(drafts))
        for (code, severity), found in sorted(by_code.items(), key=lambda item: (-len(item[1]), item[0]))
        if len(found) >= MIN_COMMON_DRAFTS and len(found) > COMMON_SHARE * len(drafts)
    )
    return ImportReview(common=common)
