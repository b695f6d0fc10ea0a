"""Writes of the audit app. Callers run `audit_record` inside the transaction of their change."""

from __future__ import annotations

from typing import Any

from django.db import models

from .models import AuditEvent


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
