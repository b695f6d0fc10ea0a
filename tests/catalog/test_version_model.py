"""What the model itself guarantees, whatever path a write takes."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from apps.catalog.definitions import check_parameters_schema
from apps.catalog.models import ToolVersion, VersionStatus
from tests.factories import ToolVersionFactory

from .factories import published

pytestmark = pytest.mark.django_db


def test_a_published_version_refuses_content_changes_with_a_clear_message(tool):
    version = published(tool=tool, number=2)
    version.description = "Now does something else."
    version.timeout_s = 99

    with pytest.raises(ValidationError) as refused:
        version.save()

    assert refused.value.messages == [
        "Version 2 of search_orders is published and cannot change (description, timeout_s). "
        "Create a new draft from it instead."
    ]
    assert ToolVersion.objects.get(pk=version.pk).description != "Now does something else."


def test_a_published_version_may_be_deprecated_and_its_changelog_edited(tool):
    version = published(tool=tool)
    version.status = VersionStatus.DEPRECATED
    version.changelog = "Superseded by v2."

    version.save()

    stored = ToolVersion.objects.get(pk=version.pk)
    assert (stored.status, stored.changelog) == (VersionStatus.DEPRECATED, "Superseded by v2.")


def test_a_retired_version_cannot_come_back(tool):
    version = ToolVersionFactory(tool=tool)
    ToolVersion.objects.filter(pk=version.pk).update(status=VersionStatus.RETIRED)
    version.refresh_from_db()
    version.status = VersionStatus.PUBLISHED

    with pytest.raises(ValidationError, match="A retired version cannot become published"):
        version.save()


def test_a_draft_can_change_freely(tool):
    version = ToolVersionFactory(tool=tool)
    version.description = "Better words."

    version.save()

    assert ToolVersion.objects.get(pk=version.pk).description == "Better words."


@pytest.mark.parametrize(
    "schema, expected",
    [
        (
            {"type": "object", "properties": {"a": {"type": "strnig"}}},
            "Not a valid JSON Schema (Draft 2020-12) at properties/a/type: 'strnig' is not valid",
        ),
        (
            {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}},
            "at properties/n/minimum: 'zero' is not of type 'number'",
        ),
        ({"type": "object", "required": "a"}, "at required: 'a' is not of type 'array'"),
        ({"type": "array"}, 'The parameters schema must have "type": "object" at the top.'),
        (["type", "object"], "The parameters schema must be a JSON object."),
    ],
    ids=["misspelled type", "non-numeric bound", "required not a list", "not an object", "a list"],
)
def test_check_schema_refuses_bad_schemas_naming_where(schema, expected):
    (problem,) = check_parameters_schema(schema)

    assert expected in problem


def test_saving_a_version_with_a_bad_schema_names_the_field_and_place(tool):
    with pytest.raises(ValidationError) as refused:
        ToolVersionFactory(tool=tool, parameters={"type": "object", "properties": {"a": {"type": "strnig"}}})

    assert list(refused.value.message_dict) == ["parameters"]
    assert "properties/a/type" in refused.value.message_dict["parameters"][0]
    assert not ToolVersion.objects.exists()


def test_fields_named_by_rules_must_exist_in_the_schema(tool):
    with pytest.raises(ValidationError) as refused:
        ToolVersionFactory(tool=tool, rules=[{"type": "date_order", "start": "from", "end": "to"}])

    assert "not in the schema's properties: from, to" in refused.value.message_dict["parameters"][0]


def test_an_output_schema_is_checked_on_save_like_the_parameters(tool):
    with pytest.raises(ValidationError) as refused:
        ToolVersionFactory(
            tool=tool, output_schema={"type": "object", "properties": {"n": {"type": "integr"}}}
        )

    assert list(refused.value.message_dict) == ["output_schema"]
    assert "at properties/n/type" in refused.value.message_dict["output_schema"][0]
    assert not ToolVersion.objects.exists()


def test_annotations_hold_only_mcps_keys_of_their_types(tool):
    with pytest.raises(ValidationError) as refused:
        ToolVersionFactory(tool=tool, annotations={"readOnlyHint": "yes", "runAsRoot": True})

    assert refused.value.message_dict["annotations"] == [
        "Unknown annotations: runAsRoot; known: title, readOnlyHint, destructiveHint, idempotentHint, "
        "openWorldHint.",
        "Of the wrong type (title is text, the hints true or false): readOnlyHint.",
    ]


def test_a_published_versions_output_schema_and_annotations_are_frozen(tool):
    version = published(tool=tool, number=2)
    version.output_schema = {"type": "object"}
    version.annotations = {"title": "Other"}

    with pytest.raises(ValidationError) as refused:
        version.save()

    assert "cannot change (output_schema, annotations)" in refused.value.messages[0]
