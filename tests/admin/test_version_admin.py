"""Curating versions in the admin: drafts editable, published ones frozen, steps by button."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.catalog.models import ToolVersion, VersionStatus
from apps.common.catalog_generation import catalog_generation
from tests.factories import SIMPLE_SCHEMA, ToolVersionFactory

pytestmark = pytest.mark.django_db

CONTENT_INPUTS = ("description", "parameters", "executor_config", "side_effect", "timeout_s", "rules")
SHOWN = re.compile(r'name="shown" value="([0-9a-f]*)"')
PUBLISH_OFF = re.compile(r'<button[^>]*value="publish"[^>]*\sdisabled>')


def _change(version: ToolVersion) -> str:
    return reverse("admin:catalog_toolversion_change", args=[version.pk])


def _button(version: ToolVersion, name: str) -> str:
    return reverse("admin:catalog_toolversion_button", args=[version.pk, name])


def _publish_form(page, note: str = "ready") -> dict:
    """The Publish button's form as `page` has it."""
    (shown,) = SHOWN.findall(page.content.decode())
    return {"note": note, "shown": shown}


def _draft_form(version: ToolVersion, **changes) -> dict:
    data = {
        "changelog": version.changelog, "description": version.description,
        "parameters": json.dumps(version.parameters), "strict": "on" if version.strict else "",
        "empty_meaning": version.empty_meaning, "side_effect": version.side_effect,
        "executor": version.executor, "executor_config": json.dumps(version.executor_config),
        "mode": version.mode, "timeout_s": version.timeout_s, "max_chars": version.max_chars,
        "approval": json.dumps(version.approval), "normalizers": json.dumps(version.normalizers),
        "context_bindings": json.dumps(version.context_bindings), "rules": json.dumps(version.rules),
        "loop_limit": version.loop_limit,
    }
    return {**data, **changes}


def test_a_published_version_shows_no_editable_content_field(world, acme_staff):
    response = acme_staff.get(_change(world.acme.version))

    page = response.content.decode()
    assert response.status_code == 200
    assert response.context["adminform"].form.fields == {}
    for name in CONTENT_INPUTS:
        assert f'name="{name}"' not in page
    assert 'name="_save"' not in page
    # its schema is shown indented, readable
    assert '<pre style="margin: 0; white-space: pre-wrap">{\n  &quot;' in page
    assert '\n  &quot;type&quot;: &quot;object&quot;,\n' in page


def test_a_post_cannot_change_a_published_version(world, acme_staff):
    version = world.acme.version

    response = acme_staff.post(_change(version), _draft_form(version, description="Sneaky new contract."))

    assert response.status_code == 403
    assert ToolVersion.objects.get(pk=version.pk).description == version.description


def test_a_draft_is_edited_through_the_service(world, acme_staff):
    draft = ToolVersionFactory(tool=world.acme.tool, number=2)

    response = acme_staff.post(_change(draft), _draft_form(draft, description="Clearer words. At most 20."))

    assert response.status_code == 302
    assert ToolVersion.objects.get(pk=draft.pk).description == "Clearer words. At most 20."
    assert AuditEvent.objects.get(action="tool_version.edit_draft").actor == "admin:acme-staff"


def test_a_bad_schema_is_shown_on_the_draft_form_naming_where(world, acme_staff):
    draft = ToolVersionFactory(tool=world.acme.tool, number=2)
    broken = {"type": "object", "properties": {"a": {"type": "strnig"}}}

    response = acme_staff.post(_change(draft), _draft_form(draft, parameters=json.dumps(broken)))

    assert response.status_code == 200
    (problem,) = response.context["adminform"].form.errors["parameters"]
    assert "Not a valid JSON Schema (Draft 2020-12) at properties/a/type" in problem
    assert ToolVersion.objects.get(pk=draft.pk).parameters == SIMPLE_SCHEMA


def test_adding_a_draft_numbers_it_after_the_latest(world, acme_staff):
    response = acme_staff.post(
        reverse("admin:catalog_toolversion_add"),
        {**_draft_form(world.acme.version), "tool": world.acme.tool.pk},
    )

    assert response.status_code == 302
    draft = ToolVersion.objects.get(tool=world.acme.tool, number=2)
    assert draft.status == VersionStatus.DRAFT


def test_new_draft_from_a_published_version_is_an_editable_copy(world, acme_staff):
    source = world.acme.version

    response = acme_staff.post(_button(source, "new-draft"), follow=True)

    draft = ToolVersion.objects.get(tool=source.tool, number=source.number + 1)
    assert response.redirect_chain[-1][0] == _change(draft)
    assert draft.status == VersionStatus.DRAFT
    assert (draft.description, draft.parameters) == (source.description, source.parameters)
    page = response.content.decode()
    assert 'name="description"' in page and 'name="parameters"' in page
    assert f"Created draft v{draft.number} from v{source.number}" in page


def test_the_new_draft_action_works_from_the_list(world, acme_staff):
    response = acme_staff.post(reverse("admin:catalog_toolversion_changelist"), {
        "action": "new_draft_from", "_selected_action": [world.acme.version.pk],
    })

    draft = ToolVersion.objects.get(tool=world.acme.tool, number=2)
    assert response["Location"] == _change(draft)


def test_publishing_a_draft_by_button(world, acme_staff, django_capture_on_commit_callbacks):
    draft = ToolVersionFactory(tool=world.acme.tool, number=2)
    generation = catalog_generation()

    opened = acme_staff.get(_change(draft))

    with django_capture_on_commit_callbacks(execute=True):
        response = acme_staff.post(_button(draft, "publish"), _publish_form(opened), follow=True)

    draft.refresh_from_db()
    assert draft.status == VersionStatus.PUBLISHED and draft.published_at is not None
    assert catalog_generation() > generation
    assert "Published acme_tool v2." in response.content.decode()
    assert AuditEvent.objects.get(action="tool_version.publish").note == "ready"


def test_publish_is_refused_on_a_page_whose_edits_failed_validation(world, acme_staff):
    draft = ToolVersionFactory(tool=world.acme.tool, number=2)
    failed = acme_staff.post(_change(draft), _draft_form(draft, description="New words.", parameters="{oops"))
    assert failed.status_code == 200 and failed.context["errors"]

    response = acme_staff.post(_button(draft, "publish"), _publish_form(failed), follow=True)

    draft.refresh_from_db()
    assert draft.status == VersionStatus.DRAFT
    assert "Publish: nothing was done. The page held changes that are not saved" in response.content.decode()
    assert not AuditEvent.objects.filter(action="tool_version.publish").exists()
    # and the page with the failed edits offered Publish switched off, saying why
    assert PUBLISH_OFF.search(failed.content.decode())
    assert "Save your changes first" in failed.content.decode()
    assert not PUBLISH_OFF.search(response.content.decode())


def test_publish_is_refused_when_the_draft_was_saved_since_the_page_was_opened(world, acme_staff):
    draft = ToolVersionFactory(tool=world.acme.tool, number=2)
    opened = acme_staff.get(_change(draft))
    acme_staff.post(_change(draft), _draft_form(draft, description="Other words, saved in another tab."))

    response = acme_staff.post(_button(draft, "publish"), _publish_form(opened), follow=True)

    assert ToolVersion.objects.get(pk=draft.pk).status == VersionStatus.DRAFT
    assert "Publish: nothing was done." in response.content.decode()


def test_the_change_page_offers_the_next_steps_only(world, acme_staff):
    published_page = acme_staff.get(_change(world.acme.version))
    draft_page = acme_staff.get(_change(ToolVersionFactory(tool=world.acme.tool, number=2)))

    assert [b.name for b in published_page.context["toolhub_buttons"]] == ["deprecate", "retire", "new-draft"]
    assert [b.name for b in draft_page.context["toolhub_buttons"]] == ["publish", "new-draft"]


def test_a_button_that_is_not_offered_is_refused(world, acme_staff):
    response = acme_staff.post(_button(world.acme.version, "publish"))

    assert response.status_code == 403
    assert not AuditEvent.objects.filter(action="tool_version.publish").exists()


def test_list_actions_report_refusals_clearly(world, acme_staff):
    draft = ToolVersionFactory(tool=world.acme.tool, number=2)

    response = acme_staff.post(reverse("admin:catalog_toolversion_changelist"), {
        "action": "publish", "_selected_action": [draft.pk, world.acme.version.pk],
    }, follow=True)

    page = response.content.decode()
    assert "Published: acme_tool v2." in page
    assert "Version 1 of acme_tool is published: only drafts can be published." in page


def test_deprecate_and_retire_from_the_list(world, acme_staff):
    changelist = reverse("admin:catalog_toolversion_changelist")
    version = world.acme.version

    acme_staff.post(changelist, {"action": "deprecate", "_selected_action": [version.pk]})
    assert ToolVersion.objects.get(pk=version.pk).status == VersionStatus.DEPRECATED
    acme_staff.post(changelist, {"action": "retire", "_selected_action": [version.pk]})
    assert ToolVersion.objects.get(pk=version.pk).status == VersionStatus.RETIRED


def test_scoped_staff_cannot_act_on_shared_versions(world, acme_staff):
    shared = world.shared_version

    page = acme_staff.get(_change(shared))
    action = acme_staff.post(reverse("admin:catalog_toolversion_changelist"), {
        "action": "retire", "_selected_action": [shared.pk],
    }, follow=True)
    button = acme_staff.post(_button(shared, "new-draft"))

    assert page.context["toolhub_buttons"] == []
    assert "shared tools are read-only for your tenant" in action.content.decode()
    assert button.status_code == 403
    assert ToolVersion.objects.filter(tool=world.shared_tool).count() == 1
    assert ToolVersion.objects.get(pk=shared.pk).status == VersionStatus.PUBLISHED


def test_new_drafts_are_offered_only_for_the_tenants_own_tools(world, acme_staff):
    response = acme_staff.get(reverse("admin:catalog_toolversion_add"))

    assert set(response.context["adminform"].form.fields["tool"].queryset) == {world.acme.tool}


def test_only_drafts_can_be_deleted(world, acme_staff):
    draft = ToolVersionFactory(tool=world.acme.tool, number=2)

    refused = acme_staff.post(reverse("admin:catalog_toolversion_delete", args=[world.acme.version.pk]),
                              {"post": "yes"})
    deleted = acme_staff.post(reverse("admin:catalog_toolversion_delete", args=[draft.pk]), {"post": "yes"})

    assert refused.status_code == 403
    assert deleted.status_code == 302
    assert list(ToolVersion.objects.filter(tool=world.acme.tool)) == [world.acme.version]


def test_a_drafts_output_schema_is_edited_checked_and_shown_once_published(world, acme_staff):
    draft = ToolVersionFactory(tool=world.acme.tool, number=2)
    result = {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]}

    refused = acme_staff.post(_change(draft), _draft_form(draft, output_schema=json.dumps({"type": "array"})))
    saved = acme_staff.post(_change(draft), _draft_form(draft, output_schema=json.dumps(result)))

    (problem,) = refused.context["adminform"].form.errors["output_schema"]
    assert "must have \"type\": \"object\" at the top" in problem
    assert saved.status_code == 302 and ToolVersion.objects.get(pk=draft.pk).output_schema == result
    shown = acme_staff.get(_change(world.acme.version)).content.decode()
    assert "output schema" in shown.lower() and 'name="output_schema"' not in shown
