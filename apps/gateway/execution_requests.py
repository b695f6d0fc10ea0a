"""What an executor is asked: built from a call that passed validation, or rebuilt from its
ledger entry alone (a worker runs it later, the reconciler asks about it)."""

from __future__ import annotations

from typing import Any

from apps.ledger.models import LedgerEntry

from .contracts import InvokeOptions, PreparedCall, ToolCall, VersionSpec, thaw
from .executors.base import ExecutionRequest


def execution_request(
    prepared: PreparedCall, *, tenant_id: int, tenant_slug: str, agent_id: int, task_id: str,
    idempotency_key: str | None, toolset: str | None = None, phase: str | None = None,
    execution_id: str | None = None,
) -> ExecutionRequest:
    """What the executor is asked: from a prepared call, or one rebuilt from its ledger entry."""
    version = prepared.version
    return ExecutionRequest(
        tenant_slug=tenant_slug,
        tenant_id=tenant_id,
        agent_id=agent_id,
        task_id=task_id,
        call_id=prepared.call.call_id,
        tool_name=version.tool_name,
        version_number=version.number,
        arguments=thaw(prepared.arguments),
        timeout_s=version.timeout_s,
        config=thaw(version.executor_config),
        subject=prepared.subject,
        idempotency_key=idempotency_key,
        platform_owned=version.platform_owned,
        readonly=not version.is_write,
        toolset=toolset,
        phase=phase,
        session_attributes=thaw(prepared.session_attributes),
        execution_id=execution_id,
        upstream_generation=prepared.upstream_generation,
    )


def call_context(prepared: PreparedCall, options: InvokeOptions) -> dict[str, Any]:
    """Where a call was made, as its ledger entry keeps it for a worker (LedgerEntry.context):
    only what is there, so most entries keep nothing."""
    context: dict[str, Any] = {}
    if options.toolset:
        context["toolset"] = options.toolset
    if options.phase:
        context["phase"] = options.phase
    if prepared.session_attributes:
        context["session_attributes"] = thaw(prepared.session_attributes)
    return context


def prepared_from_entry(entry: LedgerEntry) -> PreparedCall:
    """The call an entry recorded, as it passed validation then (its version loaded)."""
    version = VersionSpec.from_model(entry.version)
    return PreparedCall(
        call=ToolCall(call_id=entry.call_id, name=version.tool_name, arguments=entry.arguments),
        version=version,
        arguments=entry.arguments,
        args_hash=entry.args_hash,
        subject=entry.subject,
        session_attributes=entry.context.get("session_attributes") or {},
    )


def entry_execution_request(entry: LedgerEntry) -> ExecutionRequest:
    """What the executor is (or was) asked for this entry, rebuilt from the ledger row alone."""
    return execution_request(
        prepared_from_entry(entry),
        tenant_id=entry.tenant_id,
        tenant_slug=entry.tenant.slug,
        agent_id=entry.agent_id,
        task_id=entry.task_id,
        idempotency_key=entry.key,
        toolset=entry.context.get("toolset"),
        phase=entry.context.get("phase"),
        execution_id=str(entry.pk),
    )
