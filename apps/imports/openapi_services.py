"""Writes of the imports app for OpenAPI documents: a document's operations as draft tool
versions of the `http` executor.

An import is one transaction: every operation becomes a tool with a draft (or, on a
re-import, a new draft only where the document changed), and `--publish` and `--grant` act
on those drafts (import_tail.settled, the tail the MCP import shares); any refusal (a
malformed document, a draft lint refuses to publish, an unknown agent) leaves nothing
written. The catalog's, tenancy's and upstreams' services do the writes, so each tool,
draft, publication and grant has its own audit event; the import itself adds one more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.catalog.bulk import first_draft, tools_create_with_drafts
from apps.catalog.models import Tool
from apps.catalog.services import version_create_draft
from apps.tenancy.models import Tenant
from apps.upstreams.models import Upstream, UpstreamKind
from apps.upstreams.selectors import credential_get, upstream_get
from apps.upstreams.services import upstream_save

from .drafts import IMPORTED_FIELDS, Draft, draft_of
from .errors import ImportRefused, Unsupported
from .import_tail import (
    CHANGED,
    NEW,
    SKIPPED,
    UNCHANGED,
    ImportReport,
    Known,
    OperationResult,
    agents_named,
    content_with,
    settled,
)
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
    agents = agents_named(tenant=tenant, names=grant_agents)
    keys = [op.key if isinstance(op, Operation) else op[0] for op in operations]
    with transaction.atomic():
        upstream = ensure_upstream(
            tenant=tenant, name=upstream, base_url=base_url, credential_name=credential, actor=actor
        )
        known = Known.of(tenant, upstream, keys, kind="openapi")
        # The new tools, written together at the end (_write_new).
        new: list[_NewTool] = []
        results = []
        for op in operations:
            results.append(_import_operation(tenant, document, op, upstream, actor, known, new, clock))
            if progress is not None:
                progress(len(results), len(operations))
        results = _write_new(tenant, results, new, actor)
        removed = _removed(tenant, upstream, keys, actor, whole=not operation_ids,
                           deprecate=deprecate_removed)
        results, granted = settled(
            tenant, results, agents, actor, clock, publish=publish, by="OpenAPI import", what="Operation",
            action="openapi.import",
            data={"upstream": upstream, "document": document.title, "fetched_from": fetched_from or "",
                  "removed": [r.key for r in removed]},
        )
    return ImportReport(upstream=upstream, base_url=base_url, title=document.title, results=tuple(results),
                        granted=granted, removed=tuple(removed))


def _removed(tenant: Tenant, upstream: str, keys: list[str], actor: str, *, whole: bool,
             deprecate: bool) -> list[RemovedOperation]:
    """What the document no longer has (a choice of operations says nothing of the others)."""
    if not whole:
        return []
    removed = removed_operations(tenant=tenant, upstream=upstream, keys=keys)
    if deprecate and removed:
        return removed_operations_deprecate(
            tenant=tenant, upstream=upstream, removed=[r.key for r in removed], actor=actor
        )
    return removed


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


@dataclass(frozen=True)
class _NewTool:
    operation: Operation
    name: str
    summary: str
    content: dict[str, Any]


def _import_operation(
    tenant: Tenant, document: Document, operation: Operation | tuple[str, str, str], upstream: str,
    actor: str, known: Known, new: list[_NewTool], clock: Clock,
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
        return _draft_operation(tenant, document, operation, draft, upstream, actor, known, new)
    except ValidationError as error:
        # A draft the version's own checks refuse (an http config they reject) is one bad
        # operation: skipped like one ToolHub cannot map, the others import.
        return OperationResult(key=operation.key, pointer=operation.pointer, outcome=SKIPPED,
                               reason=f"operation {operation.key} cannot become a draft: "
                               f"{' '.join(error.messages)}")


def _draft_operation(
    tenant: Tenant, document: Document, operation: Operation, draft: Draft, upstream: str, actor: str,
    known: Known, new: list[_NewTool],
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
        new.append(
            _NewTool(operation=operation, name=named.name, summary=draft.summary, content=content)
        )
        return OperationResult(key=operation.key, pointer=operation.pointer, outcome=NEW, tool=named.name,
                               note=named.note)
    changed, before = _changes(previous.source, draft, upstream)
    latest = known.latest[previous.tool_id]
    if not changed:
        return OperationResult(key=operation.key, pointer=operation.pointer, outcome=UNCHANGED,
                               tool=latest.tool.name, version=latest)
    content, note = content_with(latest, draft, changed, "http", before=before)
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


