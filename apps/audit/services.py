"""Writes of the audit app. Callers run `audit_record` inside the transaction of their change,
or save through `audited_save`, which does both."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from django.db import models, transaction

from apps.common.db import bulk_append

from .models import AuditEvent

M = TypeVar("M", bound=models.Model)


def audit_record(
    *,
    actor: str,
    action: str,
    target: models.Model,
    tenant_id: int | None = None,
    note: str = "",
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one audit event about `target`."""
    return AuditEvent.objects.create(
        tenant_id=tenant_id,
        actor=actor,
        action=action,
        target_type=target._meta.label,
        target_id=str(target.pk),
        note=note,
        data=data or {},
    )


def audited_save(
    obj: M,
    *,
    actor: str,
    action: str,
    tenant_id: int | None = None,
    tenant_is_target: bool = False,
    note: str = "",
    data: dict[str, Any] | None = None,
) -> M:
    """Validate `obj` (ValidationError), then save it and append its audit event in one
    transaction. The event belongs to `tenant_id`, or to `obj` itself with `tenant_is_target`
    (a tenant, whose id is known only once saved)."""
    obj.full_clean()
    with transaction.atomic():
        obj.save()
        audit_record(
            tenant_id=obj.pk if tenant_is_target else tenant_id, actor=actor, action=action,
            target=obj, note=note, data=data,
        )
    return obj


def audit_record_many(events: Iterable[tuple[models.Model, str, dict[str, Any]]], *, actor: str,
                      tenant_id: int | None = None, note: str = "") -> None:
    """Append one audit event per (target, action, data) of `events`, as audit_record would, in
    one statement: the writes of an import of hundreds of tools."""
    bulk_append([
        AuditEvent(tenant_id=tenant_id, actor=actor, action=action, target_type=target._meta.label,
                   target_id=str(target.pk), note=note, data=data)
        for target, action, data in events
    ])
