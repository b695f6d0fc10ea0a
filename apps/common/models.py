"""Abstract bases shared by every app: timestamps and tenant ownership."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models
from django.db.models import Q


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class TenantOwnedQuerySet(models.QuerySet):
    def for_tenant(self, tenant: models.Model | int) -> TenantOwnedQuerySet:
        """Rows of one tenant only: every tenant-owned read goes through this."""
        tenant_id = tenant if isinstance(tenant, int) else tenant.pk
        return self.filter(tenant_id=tenant_id)


class TenantOwnedModel(TimeStampedModel):
    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.PROTECT, related_name="+")

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        abstract = True


@dataclass(frozen=True)
class OwnerKind:
    """How the rows without a tenant are called where names are resolved among a tenant's
    rows and those ones (the catalog's shared tools, the platform's upstreams)."""

    label: str  # "shared catalog": "The shared catalog already has ..."
    adjective: str  # "shared": "a shared tool of that name"


def owner_name_constraints(prefix: str, owner: OwnerKind) -> list[models.BaseConstraint]:
    """A name is unique within its tenant and among the rows without one.

    That a tenant's name may not repeat one of those (and the reverse) spans rows of both
    kinds, which no unique index can say: `owner_name_clash` checks it in clean().
    """
    return [
        models.UniqueConstraint(
            fields=["tenant", "name"], condition=Q(tenant__isnull=False),
            name=f"{prefix}_unique_name_per_tenant",
            violation_error_message="This tenant already has one of that name.",
        ),
        models.UniqueConstraint(
            fields=["name"], condition=Q(tenant__isnull=True), name=f"{prefix}_unique_{owner.adjective}_name",
            violation_error_message=f"The {owner.label} already has one of that name.",
        ),
    ]


def owner_name_clash(
    instance: models.Model, *, name: str, tenant_id: int | None, owner: OwnerKind
) -> str | None:
    """Why `instance`'s name would shadow (or be shadowed by) a row of the other owner kind,
    or None. A tenant's agents resolve names among its rows and the tenantless ones as one
    namespace, so the two must not overlap."""
    model = type(instance)
    kind = str(model._meta.verbose_name)
    article = "an" if kind[0] in "aeiou" else "a"
    others = model._default_manager.filter(name=name).exclude(pk=instance.pk)
    if tenant_id is not None:
        if others.filter(tenant__isnull=True).exists():
            return (
                f"The {owner.label} already has {article} {kind} named {name}, which this tenant's "
                "agents see; choose another name."
            )
        return None
    if others.filter(tenant__isnull=False).exists():
        return (
            f"A tenant already has {article} {kind} named {name}; a {owner.adjective} {kind} of that "
            "name would shadow it for that tenant's agents. Choose another name."
        )
    return None
