"""The admin's "Import OpenAPI" page refuses documents written to hurt the importer with a
4xx naming the place and the limit, quickly, and stores nothing of them."""

from __future__ import annotations

import html
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.catalog.models import Tool, ToolVersion
from apps.upstreams.models import Upstream
from tests.imports.hostile_documents import HOSTILE

PAGE = "/admin/imports/openapi/"

pytestmark = pytest.mark.usefixtures("imports_in_process")


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_upload_is_a_4xx_naming_the_place_and_nothing_is_stored(world, acme_staff, case):
    # given
    hostile = HOSTILE[case]
    upload = SimpleUploadedFile("hostile.json", hostile.text, content_type="application/json")
    started = time.monotonic()

    # when
    response = acme_staff.post(PAGE, {"document": upload, "upstream": "hostile"}, follow=True)

    # then
    assert time.monotonic() - started < 5
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    refusal = page[page.index('id="import-error"'):]
    assert "Nothing was imported." in refusal
    for said in hostile.says:
        assert said in refusal
    assert "cannot reach its database" not in page
    assert not Upstream.objects.filter(name="hostile").exists()
    assert not Tool.objects.filter(tenant=world.acme.tenant).exclude(pk=world.acme.tool.pk).exists()
    assert not ToolVersion.objects.filter(source__upstream="hostile").exists()
