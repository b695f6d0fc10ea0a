"""What the OpenAPI import (openapi_services.py) and the MCP import (mcp_services.py) share:
the result of each operation or tool and the report, what the tenant's catalog already holds
(read once per import), a re-imported draft's content, and the tail of every import inside
its transaction: the drafts published, granted, linted and audited.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from apps.audit.services import audit_record
from apps.catalog.bulk import versions_publish
from apps.catalog.lint import Finding
from apps.catalog.models import ToolVersion, VersionStatus
from apps.tenancy.models import Agent, Grant, Tenant
from apps.tenancy.selectors import agent_by_name
from apps.tenancy.services import grant_save

from .drafts import MAPPING_KEYS, Draft
from .errors import ImportRefused
from .limits import Clock
from .removed import RemovedOperation
from .review import with_findings
from .schemas import strict
from .selectors import tool_names_taken, versions_imported_from, versions_latest

NEW, CHANGED, UNCHANGED, SKIPPED = "new", "changed", "unchanged", "skipped"


@dataclass(frozen=True)
class OperationResult:
    """What an import did with one operation of the document."""

    key: str
    pointer: str
    outcome: str  # new, changed, unchanged, skipped
    tool: str = ""
    changed: tuple[str, ...] = ()
    reason: str = ""
    version: ToolVersion | None = None
    findings: tuple[Finding, ...] = ()
    note: str = ""  # why a new tool's name is not the operation's own (names.py)

    @property
    def summary(self) -> str:
        if self.outcome == CHANGED:
            return f"changed: {', '.join(self.changed)}"
        if self.outcome == SKIPPED:
            return f"skipped: {self.reason}"
        return f"{self.outcome}; {self.note}" if self.note else self.outcome

    @property
    def lint_errors(self) -> int:
        return sum(f.is_error for f in self.findings)


@dataclass(frozen=True)
class ImportReport:
    upstream: str
    base_url: str | None
    title: str
    results: tuple[OperationResult, ...]
    granted: tuple[str, ...] = ()
    # Tools imported before from operations the document no longer has (a whole-document
    # re-import only), deprecated with `deprecate_removed`.
    removed: tuple[RemovedOperation, ...] = ()


@dataclass
class Known:
    """What the tenant's catalog holds that one import looks up for each operation or tool,
    read once: the names new tools may not take (the import adds the ones it takes), and the
    versions made from the keys before."""

    taken: set[str]
    imported: dict[str, ToolVersion]
    # The latest version of each tool imported before, by tool id.
    latest: dict[int, ToolVersion]

    @classmethod
    def of(cls, tenant: Tenant, upstream: str, keys: Iterable[str], *, kind: str) -> Known:
        """Read for the operations or tools of `keys` that `upstream` (of `kind`) offers."""
        imported = versions_imported_from(tenant=tenant, upstream=upstream, keys=list(keys), kind=kind)
        return cls(taken=tool_names_taken(tenant=tenant), imported=imported,
                   latest=versions_latest(tool_ids=[v.tool_id for v in imported.values()]))


def agents_named(*, tenant: Tenant, names: Iterable[str]) -> list[Agent]:
    """The tenant's agents of `names`, to grant the imported tools to. Raises ImportRefused
    for a name the tenant has no agent of."""
    agents = []
    for name in names:
        agent = agent_by_name(tenant=tenant, name=name)
        if agent is None:
            raise ImportRefused(f"Tenant {tenant.slug} has no agent {name!r} to grant the tools to.")
        agents.append(agent)
    return agents


def content_with(base: ToolVersion, draft: Draft, changed: Iterable[str], executor: str, *,
                  before: Draft | None) -> tuple[dict[str, Any], str]:
    """`base`'s content with the changed imported fields replaced, and what the changelog
    adds; in the executor config only the request mapping is replaced, a curator's other
    keys are kept.

    A new schema meets `base`'s `strict`: when `base`'s schema is exactly the strict form of
    what the import made of the definition before (`before`), strict came with it from an
    import of the time every import was strict, and is turned off with the schema's optional
    fields; any other strict version is a curator's choice, kept, and gets the new schema in
    the strict form (every field required, the optional ones nullable)."""
    content = {
        field: copy.deepcopy(getattr(base, field))
        for field in ToolVersion.CONTENT_FIELDS
        if field not in ("tool_id", "number", "source")
    }
    for field in changed:
        content[field] = copy.deepcopy(getattr(draft, field))
    if "executor_config" in changed:
        replaced = {*MAPPING_KEYS, *draft.executor_config}
        kept = {k: v for k, v in base.executor_config.items() if k not in replaced}
        content["executor_config"] = {**kept, **draft.executor_config}
        content["executor"] = executor
    if "parameters" not in changed or not base.strict:
        return content, ""
    if before is not None and before.strict_form_is(base.parameters):
        content["strict"] = False
        return content, (" Strict turned off: the import had made the version strict, and its optional "
                         "fields now stay optional.")
    content["parameters"] = strict(draft.parameters)
    return content, " The version stays strict (a curator's choice): the new schema is in the strict form."


def settled(
    tenant: Tenant, results: list[OperationResult], agents: list[Agent], actor: str, clock: Clock, *,
    publish: bool, by: str, what: str, action: str, data: dict[str, Any],
) -> tuple[list[OperationResult], tuple[str, ...]]:
    """The tail every import shares, inside its transaction: its drafts published (when asked),
    granted, linted, and one audit event `action` when it made or granted anything. The
    results as lint read them, and the grants."""
    if publish:
        _publish_drafts(results, actor, clock, by=by, what=what)
    granted = _grant(tenant, agents, results, actor)
    results = with_findings(results)
    if granted or any(r.outcome in (NEW, CHANGED) for r in results):
        audit_record(tenant_id=tenant.pk, actor=actor, action=action, target=tenant,
                     data={**data, "results": {r.key: r.summary for r in results}, "granted": list(granted)})
    return results, granted


def _publish_drafts(results: list[OperationResult], actor: str, clock: Clock, *, by: str, what: str) -> None:
    """Publish the drafts of `results` together (catalog.bulk: lint reads the tools beside them once)."""
    drafts = [(r, v) for r in results if (v := r.version) is not None and v.status == VersionStatus.DRAFT]
    clock.check(f"publishing {len(drafts)} drafts")
    try:
        versions_publish(versions=[v for _, v in drafts], actor=actor, note=f"Published by the {by}.")
    except ValidationError as error:
        params = getattr(error, "params", None) or {"index": 0}
        failed = drafts[params["index"]][0]
        raise ImportRefused(
            f"{what} {failed.key} ({failed.tool}) cannot be published: {' '.join(error.messages)} "
            "Nothing was imported; import without publishing to review the drafts."
        ) from None


def _grant(
    tenant: Tenant, agents: list[Agent], results: list[OperationResult], actor: str
) -> tuple[str, ...]:
    granted = []
    for agent in agents:
        for result in results:
            if result.version is None:
                continue
            tool = result.version.tool
            if not Grant.objects.for_tenant(tenant).filter(agent=agent, tool=tool).exists():
                # Imported tools are the tenant's own: granting them takes no platform authority.
                grant_save(grant=Grant(tenant=tenant, agent=agent, tool=tool), actor=actor, by_platform=False)
                granted.append(f"{agent.name} → {tool.name}")
    return tuple(granted)
