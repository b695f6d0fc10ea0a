"""People management in the admin: a tenant's staff manage their own tenant's staff only.

Found as `acme`'s staff in the admin: the user admin was Django's global one, so whoever may
manage people saw (and could make superuser) every tenant's users. Now a scoped user who
holds the user permissions sees and changes only the users scoped to their tenant, can
grant no more than they hold, and adds people into their own tenant; superusers keep the
whole user admin.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.tenancy.models import StaffScope, Tenant
from tests.admin.conftest import logged_in, staff_user

pytestmark = pytest.mark.django_db

USER_PERMISSIONS = ("view_user", "add_user", "change_user", "delete_user")
NOT_FOUND = "doesn’t exist"


def _permissions(*codenames: str) -> list[Permission]:
    return list(Permission.objects.filter(content_type__app_label="auth", codename__in=codenames))


def _person(username: str, tenant: Tenant | None, *permissions: Permission) -> User:
    person = User.objects.create_user(username=username, password="pw", is_staff=True,
                                      email=f"{username}@example.com")
    person.user_permissions.set(permissions)
    if tenant is not None:
        StaffScope.objects.create(user=person, tenant=tenant)
    return person


@pytest.fixture
def lead(world) -> User:
    """acme's lead: every permission of ToolHub's apps and of managing users, in `acme-ops`."""
    user = staff_user("acme-lead", tenant=world.acme.tenant)
    user.user_permissions.add(*_permissions(*USER_PERMISSIONS))
    user.groups.add(Group.objects.create(name="acme-ops"))
    return user


@pytest.fixture
def people(world, lead) -> dict[str, User]:
    return {
        "colleague": _person("acme-colleague", world.acme.tenant),
        "globex": _person("globex-person", world.globex.tenant),
        "unscoped": _person("platform-person", None),
        "root": User.objects.create_superuser("root", password="pw"),
    }


def _change_form(person: User, **changes) -> dict:
    data = {
        "username": person.username, "first_name": person.first_name, "last_name": person.last_name,
        "email": person.email, "is_active": "on", "is_staff": "on",
        "groups": [g.pk for g in person.groups.all()],
        "user_permissions": [p.pk for p in person.user_permissions.all()],
    }
    return {**data, **changes}


def _change(person: User) -> str:
    return reverse("admin:auth_user_change", args=[person.pk])


def test_tenant_staff_list_only_their_tenants_people(lead, people):
    page = logged_in(lead).get(reverse("admin:auth_user_changelist")).content.decode()

    assert "acme-lead" in page and "acme-colleague" in page
    for other in ("globex-person", "platform-person", "root"):
        assert other not in page


def test_another_tenants_person_is_not_found(lead, people):
    client = logged_in(lead)
    foreign = people["globex"]

    page = client.get(_change(foreign), follow=True)
    posted = client.post(_change(foreign), _change_form(foreign, email="mine@acme.example"), follow=True)
    password = client.post(reverse("admin:auth_user_password_change", args=[foreign.pk]),
                           {"password1": "taken-over-1", "password2": "taken-over-1"})

    assert NOT_FOUND in page.content.decode() and "globex-person" not in page.content.decode()
    assert NOT_FOUND in posted.content.decode()
    assert password.status_code == 404
    foreign.refresh_from_db()
    assert foreign.email == "globex-person@example.com" and foreign.check_password("pw")


def test_tenant_staff_cannot_make_anyone_superuser_or_move_them_to_another_tenant(world, lead, people):
    colleague = people["colleague"]

    response = logged_in(lead).post(_change(colleague), _change_form(
        colleague, first_name="Ada", is_superuser="on", tenant=world.globex.tenant.pk,
        staff_scope=world.globex.tenant.pk,
    ))

    assert response.status_code == 302
    colleague.refresh_from_db()
    assert colleague.first_name == "Ada"
    assert colleague.is_superuser is False
    assert colleague.staff_scope.tenant == world.acme.tenant
    assert "is_superuser" not in logged_in(lead).get(_change(colleague)).context["adminform"].form.fields


def test_tenant_staff_grant_only_groups_and_permissions_they_hold(lead, people):
    colleague = people["colleague"]
    (not_held,) = _permissions("change_group")
    other_group = Group.objects.create(name="globex-operators")
    held_permission = Permission.objects.get(codename="view_agent")
    client = logged_in(lead)

    refused = client.post(_change(colleague), _change_form(
        colleague, user_permissions=[not_held.pk], groups=[other_group.pk]))
    granted = client.post(_change(colleague), _change_form(
        colleague, user_permissions=[held_permission.pk], groups=[Group.objects.get(name="acme-ops").pk]))

    assert refused.status_code == 200
    errors = refused.context["adminform"].form.errors
    assert "user_permissions" in errors and "groups" in errors
    assert granted.status_code == 302
    assert list(colleague.user_permissions.all()) == [held_permission]
    assert list(colleague.groups.values_list("name", flat=True)) == ["acme-ops"]
    offered = refused.context["adminform"].form.fields["groups"].queryset
    assert list(offered.values_list("name", flat=True)) == ["acme-ops"]


def test_a_group_the_editor_is_not_in_stays_when_they_edit(lead, people):
    colleague = people["colleague"]
    colleague.groups.add(Group.objects.create(name="auditors-of-acme"))

    response = logged_in(lead).post(_change(colleague), _change_form(colleague, groups=[], last_name="Byron"))

    assert response.status_code == 302
    assert list(colleague.groups.values_list("name", flat=True)) == ["auditors-of-acme"]


def test_a_person_holding_more_than_the_editor_is_view_only(lead, people):
    colleague = people["colleague"]
    superusers_grant = Permission.objects.get(codename="change_group")
    colleague.user_permissions.add(superusers_grant)

    response = logged_in(lead).post(_change(colleague), _change_form(colleague, user_permissions=[]))

    assert response.status_code == 403
    assert list(colleague.user_permissions.all()) == [superusers_grant]
    assert logged_in(lead).get(_change(colleague)).status_code == 200
    password = logged_in(lead).post(reverse("admin:auth_user_password_change", args=[colleague.pk]),
                                    {"password1": "taken-over-1", "password2": "taken-over-1"})
    assert password.status_code == 403


def test_a_person_added_by_tenant_staff_is_in_their_tenant(world, lead, people):
    response = logged_in(lead).post(reverse("admin:auth_user_add"), {
        "username": "acme-new", "usable_password": "true",
        "password1": "a-long-pass-phrase-1", "password2": "a-long-pass-phrase-1",
    })

    assert response.status_code == 302
    added = User.objects.get(username="acme-new")
    assert added.staff_scope.tenant == world.acme.tenant
    assert not added.is_superuser
    event = AuditEvent.objects.get(action="staff_user.add")
    assert (event.actor, event.tenant_id) == ("admin:acme-lead", world.acme.tenant.pk)


def test_staff_without_a_scope_manage_nobody(world, people):
    platform = people["unscoped"]
    platform.user_permissions.add(*_permissions(*USER_PERMISSIONS))
    client = logged_in(platform)

    assert client.get(reverse("admin:auth_user_changelist")).status_code == 403
    assert client.get(_change(people["colleague"])).status_code == 403


def test_superusers_keep_the_whole_user_admin(world, people):
    client = logged_in(people["root"])

    page = client.get(reverse("admin:auth_user_changelist")).content.decode()
    form = client.get(_change(people["globex"])).context["adminform"].form

    for username in ("acme-lead", "acme-colleague", "globex-person", "platform-person", "root"):
        assert username in page
    assert "is_superuser" in form.fields
