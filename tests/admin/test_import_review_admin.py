"""The admin's side of an import's review: the import page says a finding of most drafts
once, and saving an imported draft confirms its suggested side effect."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.catalog.models import ToolVersion
from apps.catalog.selectors import version_findings
from tests.imports.review_document import NOTES

from .test_version_admin import _draft_form

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("imports_in_process")]

PAGE = "/admin/imports/openapi/"


def _import(client):
    upload = SimpleUploadedFile("notes.json", json.dumps(NOTES).encode(), content_type="application/json")
    return client.post(PAGE, {"document": upload, "upstream": "notes"}, follow=True)


def test_the_import_page_says_a_finding_of_every_draft_once(world, acme_staff):
    html = _import(acme_staff).content.decode()

    assert html.count("description-without-when-not") == 1
    common = html[html.index('id="import-common-findings"'):html.index("<table")]
    assert "description-without-when-not on <strong>5</strong> of 5 drafts" in common
    assert "<code>search_notes</code>" in common
    assert html.count('class="import-new"') == 5


def test_saving_an_imported_draft_confirms_its_side_effect(world, acme_staff):
    _import(acme_staff)
    search = ToolVersion.objects.get(tool__name="search_notes")
    assert "side-effect-unconfirmed" in {f.code for f in version_findings(version=search)}

    response = acme_staff.post(reverse("admin:catalog_toolversion_change", args=[search.pk]),
                               _draft_form(search, side_effect="readonly"))

    assert response.status_code == 302
    search.refresh_from_db()
    assert search.side_effect == "readonly" and search.source["side_effect_confirmed"] == "readonly"
    assert "side-effect-unconfirmed" not in {f.code for f in version_findings(version=search)}
