"""A tool version's life: draft → published → deprecated → retired, each step audited."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from apps.audit.models import AuditEvent
from apps.catalog.models import ToolVersion, VersionStatus
from apps.catalog.selectors import version_latest_published
from apps.catalog.services import (
    version_create_draft,
    version_create_draft_from,
    version_deprecate,
    version_publish,
    version_retire,
    version_save_draft,
)
from apps.common.catalog_generation import catalog_generation
from tests.factories import SIMPLE_SCHEMA, ToolVersionFactory

from .factories import published

pytestmark = pytest.mark.django_db

CONTENT = {
    "description": "Finds orders of the current user. At most 20.",
    "parameters": SIMPLE_SCHEMA,
    "side_effect": "readonly",
    "executor": "python",
    "executor_config": {"callable": "tests.echo"},
}


def test_drafts_are_numbered_after_the_highest_version(tool):
    ToolVersionFactory(tool=tool, number=4)

    draft = version_create_draft(tool=tool, actor="curator", **CONTENT)

    assert (draft.number, draft.status) == (5, VersionStatus.DRAFT)
    event = AuditEvent.objects.get(action="tool_version.create_draft")
    assert (event.actor, event.target_id, event.data["number"]) == ("curator", str(draft.pk), 5)


def test_the_first_draft_is_number_one(tool):
    assert version_create_draft(tool=tool, actor="curator", **CONTENT).number == 1


def test_a_draft_with_an_unknown_field_is_refused(tool):
    with pytest.raises(ValidationError, match="Not fields of a draft: status"):
        version_create_draft(tool=tool, actor="curator", status="published", **CONTENT)
    assert not ToolVersion.objects.exists()


def test_a_draft_with_a_broken_schema_is_refused_with_the_place(tool):
    broken = {"type": "object", "properties": {"a": {"type": "strnig"}}}

    with pytest.raises(ValidationError) as refused:
        version_create_draft(tool=tool, actor="curator", **{**CONTENT, "parameters": broken})

    (problem,) = refused.value.message_dict["parameters"]
    assert "properties/a/type" in problem and "strnig" in problem
    assert not ToolVersion.objects.exists()
    assert not AuditEvent.objects.exists()


def test_publish_makes_a_draft_callable_once(tool, django_capture_on_commit_callbacks):
    draft = version_create_draft(tool=tool, actor="curator", **CONTENT)
    generation = catalog_generation()

    with django_capture_on_commit_callbacks(execute=True):
        version = version_publish(version=draft, actor="curator", note="first release")

    assert version.status == VersionStatus.PUBLISHED
    assert version.published_at is not None
    assert version_latest_published(tool=tool) == version
    assert catalog_generation() > generation
    event = AuditEvent.objects.get(action="tool_version.publish")
    assert (event.note, event.data["from_status"]) == ("first release", "draft")


def test_publishing_twice_is_refused_clearly(tool):
    draft = version_create_draft(tool=tool, actor="curator", **CONTENT)
    version_publish(version=draft, actor="a")
    stale = ToolVersion.objects.get(pk=draft.pk)

    with pytest.raises(ValidationError, match="is published: only drafts can be published"):
        version_publish(version=stale, actor="b")
    assert AuditEvent.objects.filter(action="tool_version.publish").count() == 1


def test_a_concurrent_status_change_loses_cleanly(tool):
    # given two curators who both read the version as a draft
    draft = version_create_draft(tool=tool, actor="curator", **CONTENT)
    first_published = False

    def first_curator_publishes_in_between(execute, sql, params, many, context):
        nonlocal first_published
        if not first_published and sql.startswith('UPDATE "catalog_toolversion"'):
            first_published = True
            ToolVersion.objects.filter(pk=draft.pk).update(status=VersionStatus.PUBLISHED)
        return execute(sql, params, many, context)

    # when the second one's conditional update runs after the first one's
    with connection.execute_wrapper(first_curator_publishes_in_between):
        with pytest.raises(ValidationError, match="changed by someone else"):
            version_publish(version=draft, actor="second")

    # then nothing is recorded for the loser
    assert not AuditEvent.objects.filter(action="tool_version.publish").exists()


def test_deprecate_then_retire(tool, django_capture_on_commit_callbacks):
    version = published(tool=tool)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        version_deprecate(version=version, actor="curator")
        version_retire(version=version, actor="curator")

    assert ToolVersion.objects.get(pk=version.pk).status == VersionStatus.RETIRED
    assert len(callbacks) == 2
    actions = list(AuditEvent.objects.order_by("at").values_list("action", flat=True))
    assert actions == ["tool_version.deprecate", "tool_version.retire"]


@pytest.mark.parametrize(
    "service, status, message",
    [
        (version_deprecate, VersionStatus.DRAFT, "is draft: only published versions can be deprecated"),
        (version_retire, VersionStatus.DRAFT, "is draft: only published or deprecated versions"),
        (version_publish, VersionStatus.RETIRED, "is retired: only drafts can be published"),
        (version_deprecate, VersionStatus.RETIRED, "is retired: only published versions"),
    ],
)
def test_illegal_status_changes_are_refused(tool, service, status, message):
    version = ToolVersionFactory(tool=tool)
    ToolVersion.objects.filter(pk=version.pk).update(status=status)

    with pytest.raises(ValidationError, match=message):
        service(version=version, actor="curator")
    assert ToolVersion.objects.get(pk=version.pk).status == status
    assert not AuditEvent.objects.exists()


def test_a_new_draft_from_a_published_version_copies_its_content(tool):
    source = published(
        tool=tool, number=3, parameters={**SIMPLE_SCHEMA}, normalizers={"query": ["trim"]},
        rules=[], timeout_s=3.5, max_chars=500, loop_limit=7, empty_meaning="No orders here.",
    )

    draft = version_create_draft_from(version=source, actor="curator")

    assert (draft.number, draft.status, draft.published_at) == (4, VersionStatus.DRAFT, None)
    for field in ToolVersion.CONTENT_FIELDS:
        if field != "number":
            assert getattr(draft, field) == getattr(source, field), field
    # and the copy is independent: editing it leaves the source untouched
    draft.parameters["properties"]["query"]["maxLength"] = 50
    version_save_draft(version=draft, actor="curator")
    assert "maxLength" not in ToolVersion.objects.get(pk=source.pk).parameters["properties"]["query"]
    assert AuditEvent.objects.get(action="tool_version.create_draft").note == (
        "Copied from version 3 (published)."
    )


def test_editing_a_version_that_left_draft_is_refused(tool):
    version = published(tool=tool)
    version.description = "changed"

    with pytest.raises(ValidationError, match="no longer a draft"):
        version_save_draft(version=version, actor="curator")
