"""The admin's OpenAPI import run by a real Celery worker on the real broker: the page the
form leads to ends showing the report, and the stored document is freed."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.catalog.models import ToolVersion
from apps.imports.models import OpenAPIImportRun
from tests.e2e.conftest import wait_for
from tests.e2e.test_govern_an_existing_api import curator_of
from tests.factories import TenantFactory
from tests.imports.big_documents import many_operations

pytestmark = pytest.mark.slow


def test_an_import_started_in_the_admin_is_run_by_a_worker_and_its_page_shows_the_report(
    live_server, celery_worker
):
    # given
    tenant = TenantFactory(slug="acme")
    curator = curator_of(tenant)
    upload = SimpleUploadedFile("items.json", many_operations(60), content_type="application/json")

    # when
    started = curator.post("/admin/imports/openapi/", {"document": upload, "upstream": "items"})

    # then
    assert started.status_code == 302
    page = wait_for(lambda: (html := curator.get(started["Location"]).content.decode()) and
                    'id="import-results"' in html and html, what="the report on the run's page")
    assert page.count('class="import-new"') == 60 and "http-equiv" not in page
    assert ToolVersion.objects.filter(tool__tenant=tenant, source__upstream="items").count() == 60
    assert OpenAPIImportRun.objects.get().document is None
