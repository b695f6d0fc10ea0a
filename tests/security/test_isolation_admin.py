"""Tenant isolation in the admin, for every registered ModelAdmin and every admin page.

Staff scoped to tenant `acme`, holding every permission of ToolHub's apps and of managing
people (Django's auth), request every page (changelist, add, change, delete, history,
custom object pages and buttons) and run every action against `globex`'s rows. They get
"not found", "forbidden" or an empty list: never a 500, never a page showing "globex",
never a change to globex's rows. A superuser on the same pages sees the rows, so no check
passes because the row was missing.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission, User
from django.db import models
from django.test import Client, RequestFactory
from django.urls import reverse

from .admin_matrix import (
    action_names,
    admin_of,
    autocomplete_urls,
    model_routes,
    model_urls,
    registered,
    response_text,
    site_routes,
    site_urls,
)
from .makers import MARK, TenantRows, maker_for

pytestmark = pytest.mark.django_db

MODELS = [model._meta.label for model, _ in registered()]
NOT_FOUND = "doesn’t exist"


def _staff_permissions() -> list[Permission]:
    """Every permission of ToolHub's own apps, and of managing people and groups."""
    labels = [config.label for config in apps.get_app_configs() if config.name.startswith("apps.")]
    return list(Permission.objects.filter(content_type__app_label__in=[*labels, "auth"]))


@pytest.fixture
def acme() -> TenantRows:
    return TenantRows("acme")


@pytest.fixture
def globex() -> TenantRows:
    return TenantRows(MARK)


@pytest.fixture
def acme_staff(acme) -> Client:
    """Scoped to acme, with every permission of ToolHub's own apps and of Django's auth
    (people are managed per tenant too)."""
    user = acme["tenancy.StaffScope"].user
    user.user_permissions.set(_staff_permissions())
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def root() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    return client


def _superuser_request() -> Any:
    request = RequestFactory().get("/")
    request.user = User.objects.get(username="root")
    return request


def _snapshot(rows: TenantRows) -> dict[str, Any]:
    """Every row the tenant has, as stored, and how many rows each model has."""
    counts = {model._meta.label: model._default_manager.count() for model, _ in registered()}
    return {"rows": rows.stored(), "counts": counts}


def _assert_refused(response: Any, url: str) -> str:
    text = response_text(response)
    assert response.status_code < 500, f"{url}: {response.status_code}"
    assert MARK not in text, f"{url} shows {MARK}'s data"
    return text


def _object_probe(client: Client, url: str) -> None:
    """An object page as the other tenant's staff: not found, forbidden or not allowed."""
    for method in (client.get, client.post):
        first = method(url)
        _assert_refused(first, url)
        assert first.status_code in (302, 403, 404, 405), f"{url}: {first.status_code}"
        if first.status_code == 302:
            followed = client.get(first["Location"], follow=True)
            text = _assert_refused(followed, url)
            assert NOT_FOUND in text or followed.status_code == 403, f"{url} redirected elsewhere"


def test_every_admin_model_has_a_maker():
    missing = [label for label in MODELS if maker_for(apps.get_model(label)) is None]

    assert not missing, f"add a maker to tests/security/makers.py for: {', '.join(missing)}"


@pytest.mark.parametrize("label", MODELS)
def test_tenant_staff_never_see_or_change_another_tenants_rows(label, acme, globex, acme_staff, root):
    model, model_admin = admin_of(label)
    acme.of(model)
    foreign = globex.of(model)
    request = _superuser_request()
    # The control: these pages do show globex's row to someone allowed to see it.
    change = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[foreign.pk])
    assert MARK in response_text(root.get(change)), f"the {label} maker makes no row its admin shows"
    before = _snapshot(globex)

    for route in model_routes(model):
        for url in model_urls(route, model_admin, foreign, request):
            if route.kwargs:
                _object_probe(acme_staff, url)
            else:
                _assert_refused(acme_staff.get(url, follow=True), url)
    changelist = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    for action in action_names(model_admin, request):
        data = {"action": action, ACTION_CHECKBOX_NAME: [str(foreign.pk)], "index": "0",
                "select_across": "0", "apply": "1", "post": "yes"}
        _assert_refused(acme_staff.post(changelist, data, follow=True), f"{changelist} action {action}")

    assert _snapshot(globex) == before


def test_admin_site_pages_show_nothing_of_another_tenant(acme, globex, acme_staff):
    acme.make("tenancy.Agent")
    foreign: list[models.Model] = [globex.of(model) for model, _ in registered()]

    for route in site_routes():
        for url in site_urls(route, foreign) or []:
            _assert_refused(acme_staff.get(url, follow=True), url)
    for url in autocomplete_urls():
        _assert_refused(acme_staff.get(url), url)
