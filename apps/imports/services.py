"""Writes of the imports app: an OpenAPI document's operations as draft tool versions, and
what the MCP import (mcp_services.py) shares with it: results, names, publishing, grants.

An import is one transaction: every operation (or tool) becomes a tool with a draft (or, on
a re-import, a new draft only where the document or listing changed), and `--publish` and
`--grant` act on those drafts; any refusal (a malformed document, a server that cannot be
listed, a draft lint refuses to publish, an unknown agent) leaves nothing written. The
catalog's and tenancy's services do the writes, so each tool, draft, publication and grant
has its own audit event; the import itself adds one more.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.audit.services import audit_record
from apps.catalog.bulk import first_draft, tools_create_with_drafts, versions_publish
from apps.catalog.lint import Finding
from apps.catalog.models import Tool, ToolVersion, VersionStatus
from apps.catalog.services import version_create_draft
from apps.tenancy.models import Agent, Grant, Tenant
from apps.tenancy.services import grant_save
from apps.upstreams.models import Upstream, UpstreamKind
from apps.upstreams.selectors import credential_get, upstream_get
from apps.upstreams.services import upstream_save

from .drafts import IMPORTED_FIELDS, MAPPING_KEYS, Draft, draft_of
from .errors import ImportRefused, Unsupported
from .limits import Clock, ImportLimits
from .names import tool_name
from .openapi import (
    Document,
    OpenAPIError,
    Operation,
    document_operations,
    first_server_url,
    parse_document,
)
from .removed import RemovedOperation, removed_operations, removed_operations_deprecate
from .review import with_findings
from .schemas import strict
from .selectors import (
    tool_names_taken,
    versions_imported_from,
    versions_latest,
)

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


# Told (operations done, operations in all) as an import goes.
Progress = Callable[[int, int], None]


def ensure_upstream(*, tenant: Tenant, name: str, base_url: str | None, credential_name: str | None,
                    actor: str) -> str:
    """The name of the upstream the imported versions call: the tenant's (or the platform's)
    of that name, else a new one of the tenant at `base_url` using its credential
    `credential_name`. Raises ImportRefused when a new one has no URL or its credential does
    not exist or the upstream service refuses it (e.g. a base URL that is no URL)."""
    if upstream_get(tenant_id=tenant.pk, name=name) is not None:
        return name
    if not base_url:
        raise ImportRefused(
            f"Tenant {tenant.slug} has no upstream {name!r}, and the document names no server: give "
            "the API's base URL (--base-url, or the form's base URL field)."
        )
    credential = None
    if credential_name:
        credential = credential_get(tenant_id=tenant.pk, name=credential_name)
        if credential is None:
            raise ImportRefused(
                f"Tenant {tenant.slug} has no credential {credential_name!r}; store it first "
                "(manage.py set_credential, or Upstreams → Credentials in the admin)."
            )
    try:
        upstream_save(
            upstream=Upstream(tenant=tenant, name=name, kind=UpstreamKind.HTTP, base_url=base_url,
                              credential=credential),
            actor=actor,
        )
    except ValidationError as error:
        raise ImportRefused(
            f"The upstream {name!r} at {base_url} cannot be made: {' '.join(error.messages)}"
        ) from None
    return name


def openapi_import(
    *,
    tenant: Tenant,
    document_text: str | bytes,
    upstream: str,
    actor: str,
    base_url: str | None = None,
    fetched_from: str | None = None,
    credential: str | None = None,
    operation_ids: Sequence[str] | None = None,
    publish: bool = False,
    grant_agents: Sequence[str] = (),
    deprecate_removed: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the operations of an OpenAPI 3.0/3.1 document (all, or `operation_ids`) into
    `tenant`'s catalog as drafts calling `upstream` (created from `base_url`, else the
    document's first server, when missing).

    New operations get a tool (named from the operationId, made unique in the tenant) and
    a draft; an operation imported before gets a new draft only when what the tool is made
    of changed in the document, starting from the tool's latest version (a curator's
    other edits kept). With `publish`, the drafts made are published; with `grant_agents`,
    those agents are granted every imported tool. An import of the whole document lists the
    tools imported before from operations it no longer has; with `deprecate_removed`, their
    published versions are deprecated. `progress` is told after each operation. Writes tools,
    versions, grants and their audit events, and one `openapi.import` event (none when nothing
    changed). Raises ImportRefused (OpenAPIError for the document, naming where,
    ImportLimitExceeded past a limit) with nothing written.
    """
    limits = ImportLimits.from_settings()
    limits.check_document_size(len(document_text))
    clock = Clock(limits)
    document = parse_document(document_text, limits=limits, clock=clock)
    operations = document_operations(document, only=operation_ids, limits=limits, clock=clock)
    base_url = base_url or first_server_url(document, fetched_from=fetched_from)
    agents = _agents(tenant, grant_agents)
    with transaction.atomic():
        upstream = ensure_upstream(
            tenant=tenant, name=upstream, base_url=base_url, credential_name=credential, actor=actor
        )
        known = _Known.of(tenant, upstream, operations, kind="openapi")
        results = []
        for op in operations:
            results.append(_import_operation(tenant, document, op, upstream, actor, known, clock))
            if progress is not None:
                progress(len(results), len(operations))
        results = _write_new(tenant, results, known.new, actor)
        removed = _removed(tenant, upstream, operations, actor, whole=not operation_ids,
                           deprecate=deprecate_removed)
        results, granted = settled(
            tenant, results, agents, actor, clock, publish=publish, by="OpenAPI import", what="Operation",
            action="openapi.import",
            data={"upstream": upstream, "document": document.title, "fetched_from": fetched_from or "",
                  "removed": [r.key for r in removed]},
        )
    return ImportReport(upstream=upstream, base_url=base_url, title=document.title, results=tuple(results),
                        granted=granted, removed=tuple(removed))


def _removed(tenant: Tenant, upstream: str, operations: Sequence[Operation | tuple[str, str, str]],
             actor: str, *, whole: bool, deprecate: bool) -> list[RemovedOperation]:
    """What the document no longer has (a choice of operations says nothing of the others)."""
    if not whole:
        return []
    keys = [op.key if isinstance(op, Operation) else op[0] for op in operations]
    removed = removed_operations(tenant=tenant, upstream=upstream, keys=keys)
    if deprecate and removed:
        return removed_operations_deprecate(
            tenant=tenant, upstream=upstream, removed=[r.key for r in removed], actor=actor
        )
    return removed


def _agents(tenant: Tenant, names: Iterable[str]) -> list[Agent]:
    agents = []
    for name in names:
        agent = Agent.objects.for_tenant(tenant).filter(name=name).first()
        if agent is None:
            raise ImportRefused(f"Tenant {tenant.slug} has no agent {name!r} to grant the tools to.")
        agents.append(agent)
    return agents


def _source(document: Document, operation: Operation, upstream: str, draft: Draft) -> dict[str, Any]:
    return {
        "kind": "openapi",
        "upstream": upstream,
        "key": operation.key,
        "pointer": operation.pointer,
        "digest": operation.digest,
        "document": {"title": document.title, "version": document.version},
        "operation": operation.normalized,
        # what the request leaves out, for lint's body-dropped finding (docs/lint.md)
        **({"dropped": list(draft.dropped)} if draft.dropped else {}),
    }


@dataclass
class _Known:
    """What the tenant's catalog holds that one import looks up for each operation or tool,
    read once: the names new tools may not take (the import adds the ones it takes), and the
    versions made from the keys before."""

    taken: set[str]
    imported: dict[str, ToolVersion]
    # The latest version of each tool imported before, by tool id.
    latest: dict[int, ToolVersion]
    # The new tools an OpenAPI import makes, written together at its end (_write_new).
    new: list[_NewTool] = dataclasses.field(default_factory=list)

    @classmethod
    def of(cls, tenant: Tenant, upstream: str, keys: Iterable[Operation | tuple[str, str, str] | str], *,
           kind: str) -> _Known:
        listed = [k if isinstance(k, str) else k.key if isinstance(k, Operation) else k[0] for k in keys]
        imported = versions_imported_from(tenant=tenant, upstream=upstream, keys=listed, kind=kind)
        return cls(taken=tool_names_taken(tenant=tenant), imported=imported,
                   latest=versions_latest(tool_ids=[v.tool_id for v in imported.values()]))


@dataclass(frozen=True)
class _NewTool:
    operation: Operation
    name: str
    summary: str
    content: dict[str, Any]


def _import_operation(
    tenant: Tenant, document: Document, operation: Operation | tuple[str, str, str], upstream: str,
    actor: str, known: _Known, clock: Clock,
) -> OperationResult:
    if not isinstance(operation, Operation):
        key, pointer, reason = operation
        return OperationResult(key=key, pointer=pointer, outcome=SKIPPED, reason=reason)
    clock.check(f"{operation.pointer} (operation {operation.key})")
    try:
        draft = draft_of(operation, upstream=upstream)
    except (Unsupported, OpenAPIError) as exc:
        return OperationResult(key=operation.key, pointer=operation.pointer, outcome=SKIPPED, reason=str(exc))
    try:
        return _draft_operation(tenant, document, operation, draft, upstream, actor, known)
    except ValidationError as error:
        # A draft the version's own checks refuse (an http config they reject) is one bad
        # operation: skipped like one ToolHub cannot map, the others import.
        return OperationResult(key=operation.key, pointer=operation.pointer, outcome=SKIPPED,
                               reason=f"operation {operation.key} cannot become a draft: "
                               f"{' '.join(error.messages)}")


def _draft_operation(
    tenant: Tenant, document: Document, operation: Operation, draft: Draft, upstream: str, actor: str,
    known: _Known,
) -> OperationResult:
    source = _source(document, operation, upstream, draft)
    previous = known.imported.get(operation.key)
    if previous is None:
        named = tool_name(draft.name, key=operation.key, taken=known.taken)
        # The document's `required` as written: optional fields stay optional (strict is the
        # curator's choice, per version).
        content = {"strict": False, **draft.fields(), "executor": "http", "source": source,
                   "changelog": f"Imported from {document.title or 'an OpenAPI document'}, "
                   f"operation {operation.key}."}
        try:
            # checked here, as the bulk write checks it, so that one refused draft is skipped
            # and the others are still written in one batch
            first_draft(Tool(tenant_id=tenant.pk, name=named.name, summary=draft.summary), content)
        except ValidationError:
            known.taken.discard(named.name)
            raise
        known.new.append(
            _NewTool(operation=operation, name=named.name, summary=draft.summary, content=content)
        )
        return OperationResult(key=operation.key, pointer=operation.pointer, outcome=NEW, tool=named.name,
                               note=named.note)
    changed, before = _changes(previous.source, draft, upstream)
    latest = known.latest[previous.tool_id]
    if not changed:
        return OperationResult(key=operation.key, pointer=operation.pointer, outcome=UNCHANGED,
                               tool=latest.tool.name, version=latest)
    content, note = _content_with(latest, draft, changed, "http", before=before)
    with transaction.atomic():  # a refused draft (ValidationError) leaves the import's other writes
        version = version_create_draft(
            tool=latest.tool, actor=actor, **content, source=source,
            changelog=f"Re-imported operation {operation.key}: {', '.join(changed)} changed in the "
            f"document.{note}",
        )
    return OperationResult(key=operation.key, pointer=operation.pointer, outcome=CHANGED,
                           tool=latest.tool.name, changed=tuple(changed), version=version)


def _write_new(tenant: Tenant, results: list[OperationResult], new: list[_NewTool],
               actor: str) -> list[OperationResult]:
    """The results with the new tools and drafts written, in a few queries for all of them."""
    try:
        versions = iter(tools_create_with_drafts(
            tenant_id=tenant.pk, new=[(n.name, n.summary, n.content) for n in new], actor=actor
        ))
    except ValidationError as error:
        params = getattr(error, "params", None) or {"index": 0}
        failed = new[params["index"]].operation
        raise OpenAPIError(
            failed.pointer, f"operation {failed.key} cannot become a draft: {' '.join(error.messages)}"
        ) from None
    return [replace(r, version=next(versions)) if r.outcome == NEW else r for r in results]


def _changes(source: dict[str, Any], draft: Draft, upstream: str) -> tuple[list[str], Draft | None]:
    """The imported fields whose content differs between the operation as it was imported
    (re-converted from the version's source: the draft `before`, None when it no longer
    converts) and as it is now."""
    try:
        before = draft_of(
            Operation(key=source["key"], pointer=source["pointer"], normalized=source["operation"]),
            upstream=upstream,
        )
    except (KeyError, TypeError, Unsupported, OpenAPIError):
        return list(IMPORTED_FIELDS), None
    return draft.changed_since(before), before


def _content_with(base: ToolVersion, draft: Draft, changed: Iterable[str], executor: str, *,
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
