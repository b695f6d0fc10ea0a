"""Which tenant's rows a person sees in the admin (settings.TOOLHUB_ADMIN_SCOPE names
`admin_scope_of`; the admins of every app apply the scope through apps/common/admin.py).

A superuser sees everything; a staff user with a StaffScope sees only that tenant's rows (and
the shared catalog, read-only); any other staff user sees no tenant-owned row at all.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

from apps.common.admin import AdminScope

from .selectors import staff_tenant_id


def admin_scope_of(*, user: User | AnonymousUser) -> AdminScope:
    """The scope of one admin user. Reads their StaffScope (unless a superuser)."""
    if user.is_active and user.is_superuser:
        return AdminScope(unrestricted=True)
    return AdminScope(unrestricted=False, tenant_id=staff_tenant_id(user=user))
