"""`manage.py audit_grants` lists the grants of shared tools the platform did not make,
including those made before ToolHub recorded who grants (filled in from the audit log)."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command

from apps.audit.services import audit_record
from apps.tenancy.models import Grant, StaffScope
from apps.tenancy.services import grant_save
from tests.factories import AgentFactory, TenantFactory, ToolFactory

pytestmark = pytest.mark.django_db

backfill = importlib.import_module("apps.tenancy.migrations.0003_grant_granted_by")


def audit_grants(capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        call_command("audit_grants")
        status = 0
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_the_platforms_grants_pass_and_a_tenants_own_tools_are_not_listed(capsys):
    acme = TenantFactory(slug="acme")
    grant_save(grant=Grant(tenant=acme, tool=ToolFactory(name="refund_payment")), actor="admin:root",
               by_platform=True)
    grant_save(grant=Grant(tenant=acme, tool=ToolFactory(name="own_tool", tenant=acme)),
               actor="admin:acme-curator", by_platform=False)

    status, out, err = audit_grants(capsys)

    assert (status, out) == (0, "")
    assert "Every grant of a shared tool was made by the platform." in err


def test_shared_tool_grants_made_before_the_fix_are_reported_with_who_made_them(capsys):
    # given grants of the shared refund_payment saved the way it was possible before: by acme's
    # curator in the admin, and with no record at all
    acme, globex = TenantFactory(slug="acme"), TenantFactory(slug="globex")
    curator = User.objects.create_user(username="acme-curator", is_staff=True)
    StaffScope.objects.create(user=curator, tenant=acme)
    User.objects.create_superuser(username="root")
    refund = ToolFactory(name="refund_payment")
    by_curator = Grant.objects.create(tenant=acme, tool=refund)
    audit_record(tenant_id=acme.pk, actor="admin:acme-curator", action="grant.create", target=by_curator)
    by_root = Grant.objects.create(tenant=globex, agent=AgentFactory(tenant=globex, name="bot"), tool=refund)
    audit_record(tenant_id=globex.pk, actor="admin:root", action="grant.create", target=by_root)
    unrecorded = Grant.objects.create(tenant=globex, tool=refund)

    # when the migration fills in who granted them, and the check runs
    backfill.fill_granted_by(apps, None)
    status, out, err = audit_grants(capsys)

    # then the curator's grant and the unrecorded one are listed, the superuser's is not
    assert status == 1
    lines = out.splitlines()
    assert lines == [
        f"acme: all agents → refund_payment (grant {by_curator.pk}, "
        f"{by_curator.updated_at:%Y-%m-%d %H:%M} UTC): saved by admin:acme-curator, not the platform",
        f"globex: all agents → refund_payment (grant {unrecorded.pk}, "
        f"{unrecorded.updated_at:%Y-%m-%d %H:%M} UTC): maker not recorded",
    ]
    assert "2 grant(s) of shared tools not made by the platform" in err
    by_root.refresh_from_db()
    assert (by_root.granted_by, by_root.granted_by_platform) == ("admin:root", True)
