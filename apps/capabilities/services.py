"""Writes of the capabilities app: count what agents could not do, and the operators' answer.

Three things are recorded, grouped per tenant under one normalized capability name:
a `request_capability` call, a call of a tool name the agent cannot see at all
(`unknown_tool`), and a call of a tool the agent has but not in the current toolset or
phase (`outside_toolset`). The first two are missing capabilities (reason `unknown`); the
third is counted apart (reason `not_in_phase`): the tool exists, the agent was in the wrong
step. Agent-side recording is analytics: it must never fail a call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.utils import timezone

from apps.audit.services import audit_record
from apps.catalog.models import Tool
from apps.common.capability_names import capability_name

from .models import CapabilityReason, CapabilityRequest, CapabilityStatus
from .selectors import tenant_id_for_slug

logger = logging.getLogger("toolhub.capabilities")

MAX_SAMPLES = 5
MAX_SAMPLE_TEXT = 500

SOURCE_REQUEST = "request_capability"
SOURCE_UNKNOWN = "unknown_tool"
SOURCE_OUTSIDE = "outside_toolset"


def _clipped(value: Any) -> Any:
    """A sample value small enough to keep: long text cut, large structures as cut JSON."""
    if isinstance(value, str):
        return value if len(value) <= MAX_SAMPLE_TEXT else value[: MAX_SAMPLE_TEXT - 1] + "…"
    if isinstance(value, dict | list):
        text = json.dumps(value, ensure_ascii=False, default=str)
        return value if len(text) <= MAX_SAMPLE_TEXT else _clipped(text)
    return value


def capability_request_record(
    *,
    tenant_id: int,
    capability: str,
    sample: dict[str, Any],
    reason: str = CapabilityReason.UNKNOWN,
    now: datetime | None = None,
) -> CapabilityRequest:
    """Count one more request of `capability` for `reason` in a tenant and keep `sample`
    among the newest.

    Writes the tenant's CapabilityRequest row for the normalized name and reason (created on
    first sight, status open) under a row lock, so concurrent requests all count. Raises
    DatabaseError when the database fails.
    """
    name = capability_name(capability)
    now = now or timezone.now()
    kept = {"at": now.isoformat(), **{key: _clipped(value) for key, value in sample.items()}}
    with transaction.atomic():
        row, created = CapabilityRequest.objects.select_for_update().get_or_create(
            tenant_id=tenant_id,
            name=name,
            reason=reason,
            defaults={"count": 1, "first_seen": now, "last_seen": now, "samples": [kept]},
        )
        if not created:
            row.count += 1
            row.last_seen = max(row.last_seen, now)
            row.samples = [kept, *row.samples][:MAX_SAMPLES]
            row.save(update_fields=["count", "last_seen", "samples", "updated_at"])
    return row


def capability_note_unknown_tool(
    *,
    tenant_id: int,
    agent_name: str,
    task_id: str,
    call_id: str,
    tool: str,
    toolset: str,
    phase: str,
    arguments: Any,
    elsewhere: bool,
) -> None:
    """Record a call the gateway answered with `unknown_tool`.

    A name the agent may call elsewhere (`elsewhere`) counts as `outside_toolset` (reason
    `not_in_phase`), any other as `unknown_tool` (reason `unknown`). Writes one
    CapabilityRequest row. Never raises: a database failure is logged and the call's envelope
    goes out unchanged.
    """
    try:
        capability_request_record(
            tenant_id=tenant_id,
            capability=tool,
            reason=CapabilityReason.NOT_IN_PHASE if elsewhere else CapabilityReason.UNKNOWN,
            sample={
                "source": SOURCE_OUTSIDE if elsewhere else SOURCE_UNKNOWN,
                "tool": tool,
                "agent": agent_name,
                "task_id": task_id,
                "call_id": call_id,
                "toolset": toolset,
                "phase": phase,
                "arguments": arguments,
            },
        )
    except DatabaseError:
        logger.exception("could not record the unknown tool %r as a capability request", tool[:100])


def capability_requested(
    *,
    tenant_slug: str,
    task_id: str,
    call_id: str,
    capability: str,
    reason: str,
    example_arguments: str | None,
    opened: Sequence[str] = (),
) -> dict[str, Any]:
    """Record a `request_capability` call (the built-in tool's executor hands it over), with
    the granted tools it opened to the task (`opened`), which the admin shows on the request.

    Writes the tenant's CapabilityRequest row (capability_request_record); returns the
    tool's result: what was recorded and what to tell the user, from the operators' answer.
    """
    row = capability_request_record(
        tenant_id=tenant_id_for_slug(slug=tenant_slug),
        capability=capability,
        sample={
            "source": SOURCE_REQUEST,
            "capability": capability,
            "reason": reason,
            "example_arguments": example_arguments,
            "task_id": task_id,
            "call_id": call_id,
            **({"opened": list(opened)} if opened else {}),
        },
    )
    return {
        "recorded": {"capability": row.name, "status": row.status, "times_requested": row.count},
        "hint": _hint(row),
    }


def _hint(row: CapabilityRequest) -> str:
    if row.status == CapabilityStatus.PLANNED:
        return "The operators already plan to add this. Tell the user it is not available yet."
    if row.status == CapabilityStatus.FULFILLED and row.fulfilled_by is not None:
        tool = row.fulfilled_by.name
        return (
            f"The operators say the tool {tool} now does this: use {tool} if it is in your tool list; "
            "otherwise tell the user it is not available to you."
        )
    if row.status == CapabilityStatus.DECLINED:
        return (
            f"The operators decided not to add this ({row.decline_reason}). Tell the user it cannot "
            "be done here."
        )
    return (
        "Recorded for the operators. Tell the user this cannot be done here yet and that the need "
        "was passed on; do not ask for the same capability again in this task."
    )


def capability_request_set_status(
    *,
    request: CapabilityRequest,
    status: str,
    actor: str,
    fulfilled_by: Tool | None = None,
    reason: str = "",
) -> CapabilityRequest:
    """The operators' answer: open (reopen), planned, fulfilled by a tool, declined with a reason.

    Writes the request's status fields and an audit event in one transaction. Raises
    ValidationError when fulfilled has no tool (or one this tenant cannot see) or declined
    has no reason.
    """
    if status not in CapabilityStatus.values:
        raise ValidationError(f"Unknown status {status!r}.", code="status")
    reason = reason.strip()
    if status == CapabilityStatus.FULFILLED:
        if fulfilled_by is None:
            raise ValidationError("Name the tool that now provides this capability.", code="fulfilled_by")
        if fulfilled_by.tenant_id not in (None, request.tenant_id):
            raise ValidationError("That tool belongs to another tenant.", code="fulfilled_by")
    if status == CapabilityStatus.DECLINED and not reason:
        raise ValidationError("Say why it is declined; agents read the reason.", code="decline_reason")
    with transaction.atomic():
        row = CapabilityRequest.objects.select_for_update().get(pk=request.pk)
        before = row.status
        row.status = status
        row.fulfilled_by = fulfilled_by if status == CapabilityStatus.FULFILLED else None
        row.decline_reason = reason if status == CapabilityStatus.DECLINED else ""
        row.save(update_fields=["status", "fulfilled_by", "decline_reason", "updated_at"])
        audit_record(
            actor=actor,
            action=f"capability.{status}",
            target=row,
            tenant_id=row.tenant_id,
            note=reason,
            data={
                "name": row.name,
                "from": before,
                "fulfilled_by": row.fulfilled_by.name if row.fulfilled_by else None,
            },
        )
    return row
