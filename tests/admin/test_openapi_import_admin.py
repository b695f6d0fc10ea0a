"""The admin's "Import OpenAPI" page, as tenant-scoped staff and as a superuser."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.catalog.models import Tool, ToolVersion

from .conftest import logged_in, staff_user

PAGE = "/admin/imports/openapi/"

pytestmark = pytest.mark.usefixtures("imports_in_process")
PETSTORE = Path(__file__).resolve().parents[1] / "imports" / "documents" / "petstore.yaml"


def _upload(name: str = "petstore.yaml") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, PETSTORE.read_bytes(), content_type="application/yaml")


def test_tenant_staff_import_a_file_into_their_tenant_and_see_each_draft(world, acme_staff):
    page = acme_staff.get(PAGE)
    assert page.status_code == 200 and b'name="tenant"' not in page.content

    response = acme_staff.post(PAGE, {"document": _upload(), "upstream": "petstore"}, follow=True)

    assert response.status_code == 200
    imported = ToolVersion.objects.filter(source__upstream="petstore").select_related("tool")
    assert {v.tool.name for v in imported} == {"find_pets", "add_pet", "find_pet_by_id", "delete_pet"}
    assert {v.tool.tenant_id for v in imported} == {world.acme.tenant.pk}
    html = response.content.decode()
    for version in imported:
        link = reverse("admin:catalog_toolversion_change", args=[version.pk])
        assert f'href="{link}">{version.tool.name} v1</a> (draft)' in html
    assert "undescribed-parameter" in html and "write-without-reconcile" in html
    assert html.count('class="import-new"') == 4
    # the drafts open, with the source they were made from
    draft = acme_staff.get(reverse("admin:catalog_toolversion_change", args=[imported[0].pk]))
    assert draft.status_code == 200 and b"sha256:" in draft.content


def test_a_reimport_shows_unchanged_operations(world, acme_staff):
    acme_staff.post(PAGE, {"document": _upload(), "upstream": "petstore"}, follow=True)

    response = acme_staff.post(PAGE, {"document": _upload(), "upstream": "petstore"}, follow=True)

    assert response.content.decode().count('class="import-unchanged"') == 4
    assert ToolVersion.objects.filter(source__upstream="petstore").count() == 4


def test_a_malformed_document_is_refused_on_the_page_and_nothing_is_written(world, acme_staff):
    broken = SimpleUploadedFile("broken.json", b'{"openapi": "3.1.0", "paths": [{"get": 7}]}')

    response = acme_staff.post(PAGE, {"document": broken, "upstream": "petstore"}, follow=True)

    refusal = "Nothing was imported. /paths: must be an object of paths."
    assert refusal in response.content.decode()
    assert not Tool.objects.filter(tenant=world.acme.tenant).exclude(pk=world.acme.tool.pk).exists()


def test_a_url_the_egress_policy_refuses_is_not_fetched(world, acme_staff, settings):
    settings.TOOLHUB_EGRESS_ALLOW = []

    response = acme_staff.post(PAGE, {"url": "http://169.254.169.254/openapi.json", "upstream": "x"},
                               follow=True)

    assert "The egress policy refuses http://169.254.169.254/openapi.json" in response.content.decode()


def test_a_superuser_picks_the_tenant_and_staff_without_a_tenant_may_not_import(
    world, superuser, unscoped_staff
):
    assert superuser.post(PAGE, {"document": _upload(), "upstream": "petstore"}).status_code == 200
    assert not Tool.objects.filter(name="find_pets").exists()  # the form asked for a tenant

    superuser.post(PAGE, {"document": _upload(), "upstream": "petstore", "tenant": world.globex.tenant.pk})
    assert Tool.objects.get(name="find_pets").tenant == world.globex.tenant

    assert unscoped_staff.get(PAGE).status_code == 403


@pytest.mark.django_db
def test_staff_without_the_permission_to_add_versions_may_not_import(world):
    user = staff_user("reader", tenant=world.acme.tenant)
    user.user_permissions.remove(*user.user_permissions.filter(codename="add_toolversion"))

    assert logged_in(user).get(PAGE).status_code == 403
