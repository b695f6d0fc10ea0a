"""Publish acts on the saved draft, so it is off while the page shows anything else.

Found in a browser: a draft whose edits failed validation still offered Publish, which
published the stored version, not the edits on screen.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

import tests.gateway.callables  # noqa: F401  (registers the tests.echo executor)
from apps.catalog.models import ToolVersion, VersionStatus
from tests.browser.conftest import log_in
from tests.factories import TenantFactory, ToolFactory, ToolVersionFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PUBLISH = "form[action$='/do/publish/']"


def test_publish_cannot_publish_a_draft_whose_edits_are_not_saved(live_server, page):
    draft = ToolVersionFactory(tool=ToolFactory(name="find_things", tenant=TenantFactory(slug="acme")))
    User.objects.create_superuser(username="curator", password="pw-for-browser")
    page.on("dialog", lambda dialog: dialog.accept())
    log_in(page, f"{live_server.url}/admin", "curator", "pw-for-browser")
    page.goto(f"{live_server.url}/admin/catalog/toolversion/{draft.pk}/change/")
    expect(page.locator(f"{PUBLISH} button")).to_be_enabled()
    expect(page.locator(f"{PUBLISH} .toolhub-unsaved-note")).to_be_hidden()

    # an edit switches Publish off at once, saying why
    page.fill("#id_description", "Finds other things. At most 20 results.")
    expect(page.locator(f"{PUBLISH} button")).to_be_disabled()
    expect(page.locator(f"{PUBLISH} .toolhub-unsaved-note")).to_have_text(
        "Save your changes first: Publish acts on the saved tool version.")

    # an edit that fails validation: the page shows it, and Publish stays off
    page.fill("#id_parameters", '{"type": "object", "properties": ')
    page.click("input[name=_continue]")
    expect(page.locator(".errornote", has_text="Please correct the error below.")).to_be_visible()
    assert page.input_value("#id_description") == "Finds other things. At most 20 results."
    expect(page.locator(f"{PUBLISH} button")).to_be_disabled()
    expect(page.locator(f"{PUBLISH} .toolhub-unsaved-note")).to_be_visible()

    # pressed anyway (the button switched back on by hand): the server refuses
    page.eval_on_selector(f"{PUBLISH} button", "button => { button.disabled = false; }")
    page.fill(f"{PUBLISH} input[name=note]", "ship it")
    page.click(f"{PUBLISH} button")
    expect(page.locator(".messagelist .error", has_text="Publish: nothing was done.")).to_be_visible()
    draft.refresh_from_db()
    assert draft.status == VersionStatus.DRAFT
    assert draft.description == ToolVersionFactory.description

    # on the saved draft, as the page now shows it, Publish works
    page.fill(f"{PUBLISH} input[name=note]", "reviewed as shown")
    page.click(f"{PUBLISH} button")
    expect(page.locator(".messagelist .success", has_text="Published find_things v")).to_be_visible()
    assert ToolVersion.objects.get(pk=draft.pk).status == VersionStatus.PUBLISHED
