"""Lint findings that point at what breaks calls: schemas no value satisfies, nulls left out
on the wire, what an import dropped or only guessed, optional fields whose default changes a
call's meaning; and name-based errors that become warnings on an imported API's own fields."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from apps.catalog.lint import ToolDefinition, lint_tool, with_side_effect_confirmed
from apps.catalog.models import ToolVersion, VersionStatus
from apps.catalog.services import version_publish
from tests.factories import ToolFactory, ToolVersionFactory

DESCRIPTION = "Finds orders. At most 20 results. Do not use it to change anything."
IMPORTED = {"kind": "openapi", "upstream": "shop", "key": "op", "pointer": "/paths/~1x/post"}


def closed(properties: dict, required: list[str] | None = None, **extra) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties) if required is None
            else required, "additionalProperties": False, **extra}


def lint(parameters: dict | None = None, **changes) -> dict[str, list]:
    """The findings of a definition, by code: [(severity, field), ...]."""
    base = {"name": "find_orders", "description": DESCRIPTION,
            "parameters": parameters or closed({"q": {"type": "string", "description": "Words."}})}
    found: dict[str, list] = {}
    for f in lint_tool(ToolDefinition(**{**base, **changes})):
        found.setdefault(f.code, []).append((f.severity, f.field))
    return found


def http(**config) -> dict:
    return {"executor": "http", "executor_config": {"upstream": "shop", "method": "GET", "path": "/x",
                                                    "query": ["q"], **config}}


# unsatisfiable schemas

def test_an_allof_of_two_closed_objects_requiring_different_properties_is_an_error():
    parameters = {"allOf": [closed({"a": {"type": "string", "description": "A."}}),
                            closed({"b": {"type": "string", "description": "B."}})]}

    findings = [f for f in lint_tool(ToolDefinition(name="t", description=DESCRIPTION, parameters=parameters))
                if f.code == "unsatisfiable-schema"]

    assert [(f.severity, f.field) for f in findings] == [("error", "parameters")]
    assert "Every call is refused" in findings[0].why and "merge the allOf" in findings[0].fix


def test_an_allof_of_closed_objects_with_optional_properties_accepts_none_of_them():
    # {} passes, but a call giving any argument is refused: Asana's create_task
    parameters = {"allOf": [closed({"a": {"type": "string", "description": "A."}}, []),
                            closed({"b": {"type": "string", "description": "B."}}, [])]}

    findings = [f for f in lint_tool(ToolDefinition(name="t", description=DESCRIPTION, parameters=parameters))
                if f.code == "unsatisfiable-schema"]

    assert [(f.severity, f.field) for f in findings] == [("error", "parameters/allOf")]
    assert "No valid arguments can hold a, b" in findings[0].why


def test_an_allof_of_closed_objects_inside_a_property_is_named_there():
    # Asana's own shape: the task's fields are in `data`
    task = {"allOf": [closed({"name": {"type": "string", "description": "Name."}}, []),
                      closed({"notes": {"type": "string", "description": "Notes."}}, [])],
            "description": "Task."}
    findings = [f for f in lint_tool(ToolDefinition(name="t", description=DESCRIPTION,
                                                    parameters=closed({"data": task})))
                if f.code == "unsatisfiable-schema"]

    assert [(f.severity, f.field) for f in findings] == [("error", "parameters/properties/data/allOf")]
    assert "No valid value of 'data' can hold name, notes" in findings[0].why


def test_an_allof_of_closed_objects_as_an_arrays_items_is_named_there():
    # only [] passes: an empty array hides that no item is valid
    item = {"allOf": [closed({"name": {"type": "string", "description": "Name."}}, []),
                      closed({"notes": {"type": "string", "description": "Notes."}}, [])]}
    findings = [f for f in lint_tool(ToolDefinition(name="t", description=DESCRIPTION, parameters=closed({
        "tasks": {"type": "array", "items": item, "description": "Tasks."}})))
        if f.code == "unsatisfiable-schema"]

    assert [(f.severity, f.field) for f in findings] == [("error", "parameters/properties/tasks/items/allOf")]
    assert "No valid value of 'tasks[]' can hold name, notes" in findings[0].why


@pytest.mark.parametrize("node", [
    {"type": "integer", "minimum": 5, "maximum": 1, "description": "Count."},
    {"type": "string", "enum": [1, 2], "description": "Kind."},
    {"type": "string", "minLength": 3, "maxLength": 2, "description": "Code."},
])
def test_a_property_no_value_satisfies_is_an_error_even_when_optional(node):
    found = lint(closed({"q": {"type": "string", "description": "Words."}, "n": node}, ["q"]), strict=False)

    assert found["unsatisfiable-schema"] == [("error", "parameters/properties/n")]


def test_a_nested_property_is_named_where_it_fails():
    config = closed({"size": {"type": "integer", "minimum": 10, "maximum": 1, "description": "Size."}})
    found = lint(closed({"config": {**config, "description": "Settings."}}))

    assert found["unsatisfiable-schema"] == [("error", "parameters/properties/config/properties/size")]


def test_required_naming_a_property_a_closed_object_forbids_is_an_error():
    found = lint(closed({"q": {"type": "string", "description": "Words."}}, ["q", "qq"]))

    assert found["unsatisfiable-schema"] == [("error", "parameters")]


def test_a_satisfiable_schema_with_patterns_formats_and_nulls_has_no_such_finding():
    parameters = closed({
        "q": {"type": "string", "pattern": "^[a-z]+$", "description": "Words."},
        "at": {"type": ["string", "null"], "format": "date-time", "description": "When."},
        "n": {"type": "integer", "minimum": 1, "maximum": 1, "description": "Count."},
        "kind": {"enum": ["a", None], "description": "Kind."},
    })

    assert "unsatisfiable-schema" not in lint(parameters)


@pytest.mark.django_db
@pytest.mark.parametrize("parameters", [
    closed({"n": {"type": "integer", "minimum": 5, "maximum": 1, "description": "Count."}}),
    # Asana's create_task, written by hand
    closed({"data": {"allOf": [closed({"name": {"type": "string", "description": "Name."}}, []),
                               closed({"workspace": {"type": "string", "description": "Workspace."}}, [])],
                     "description": "The task."}}),
])
def test_publishing_is_refused_while_no_value_satisfies_the_schema(parameters):
    draft = ToolVersionFactory(tool=ToolFactory(name="lookup"), number=1, parameters=parameters)

    with pytest.raises(ValidationError, match="lookup v1 cannot be published: lint found 1 error"):
        version_publish(version=draft, actor="curator")

    assert ToolVersion.objects.get(pk=draft.pk).status == VersionStatus.DRAFT


# name-based findings: imported versions vs hand-written ones

WEBHOOK = closed({"config": {**closed({"url": {"type": "string", "description": "Where events go."}}),
                             "description": "The hook's settings."}})


def test_a_webhooks_config_url_in_an_imported_version_is_a_warning_with_what_to_check():
    findings = [f for f in lint_tool(ToolDefinition(name="create_hook", description=DESCRIPTION,
                                                    parameters=WEBHOOK, source=IMPORTED))
                if f.code == "implementation-parameter"]

    assert [(f.severity, f.field) for f in findings] == [
        ("warning", "parameters/properties/config/properties/url")
    ]
    assert "describes it as the API's own field" in findings[0].why
    assert "which hosts" in findings[0].fix


def test_the_same_field_written_by_hand_stays_an_error():
    assert lint(WEBHOOK)["implementation-parameter"] == [
        ("error", "parameters/properties/config/properties/url")
    ]


def test_an_imported_apis_own_user_id_is_a_warning_but_an_undescribed_top_level_one_is_an_error():
    described = closed({"user_id": {"type": "string", "description": "The API's user the key acts for."}})
    bare = closed({"user_id": {"type": "string"}})

    assert lint(described, source=IMPORTED)["identity-not-bound"] == [
        ("warning", "parameters/properties/user_id")
    ]
    assert lint(bare, source=IMPORTED)["identity-not-bound"] == [("error", "parameters/properties/user_id")]
    assert lint(described)["identity-not-bound"] == [("error", "parameters/properties/user_id")]


def test_an_imported_path_parameter_naming_the_resource_is_a_warning():
    parameters = closed({"endpoint": {"type": "string"}})

    found = lint(parameters, source=IMPORTED, **http(path="/endpoints/{endpoint}", query=[]))

    assert found["implementation-parameter"] == [("warning", "parameters/properties/endpoint")]


@pytest.mark.django_db
def test_an_imported_draft_with_only_such_warnings_publishes():
    draft = ToolVersionFactory(tool=ToolFactory(name="create_hook"), number=1, parameters=WEBHOOK,
                               source=IMPORTED)

    assert version_publish(version=draft, actor="curator").status == VersionStatus.PUBLISHED


# nulls on the wire

NULLABLE = {"milestone": {"type": ["integer", "null"], "description": "Milestone, null to clear it."},
            "title": {"type": "string", "description": "Title."}}


def test_an_optional_nullable_field_whose_null_is_left_out_is_a_warning():
    found = lint(closed(NULLABLE, []), strict=False, **http(method="PATCH", query=[], body="rest"))

    assert found["optional-sent-as-null"] == [("warning", "executor_config/send_null")]


def test_send_null_listing_the_field_says_nothing():
    found = lint(closed(NULLABLE, []), strict=False,
                 **http(method="PATCH", query=[], body="rest", send_null=["/milestone"]))

    assert "optional-sent-as-null" not in found


def test_strict_nullable_fields_left_out_are_only_noted_and_only_on_an_update():
    found = lint(closed(NULLABLE), **http(method="PATCH", query=[], body="rest"))

    assert found["optional-sent-as-null"] == [("info", "executor_config/send_null")]
    assert "optional-sent-as-null" not in lint(closed(NULLABLE), **http(query=list(NULLABLE)))


def test_send_null_naming_a_field_that_admits_no_null_is_a_warning():
    findings = [f for f in lint_tool(ToolDefinition(
        name="t", description=DESCRIPTION, parameters=closed(NULLABLE, []), strict=False,
        **http(method="PATCH", query=[], body="rest", send_null=["/milestone", "/title", "/nothing"]),
    )) if f.code == "optional-sent-as-null"]

    assert [(f.severity, f.field) for f in findings] == [("warning", "executor_config/send_null")]
    assert "send_null lists /title, /nothing" in findings[0].why


# what an import dropped or guessed

def test_a_body_the_import_dropped_is_a_warning_naming_it():
    source = {**IMPORTED, "dropped": [{"what": "the request body (application/octet-stream)",
                                       "reason": "file uploads are not supported"}]}

    findings = [f for f in lint_tool(ToolDefinition(name="t", description=DESCRIPTION,
                                                    parameters=closed({}), source=source, **http()))
                if f.code == "body-dropped"]

    assert [(f.severity, f.field) for f in findings] == [("warning", "executor_config/body")]
    assert "the request body (application/octet-stream) (file uploads are not supported)" in findings[0].why


def test_a_post_search_imported_as_a_write_asks_the_curator_to_confirm():
    findings = [f for f in lint_tool(ToolDefinition(
        name="search_customers", description=DESCRIPTION, side_effect="write", source=IMPORTED,
        parameters=closed({"q": {"type": "string", "description": "Words."}}), **http(method="POST"),
    )) if f.code == "side-effect-unconfirmed"]

    assert [(f.severity, f.field) for f in findings] == [("warning", "side_effect")]
    assert "suggested from the method POST" in findings[0].why and "'search'" in findings[0].why


def test_a_confirmed_side_effect_and_a_hand_written_post_are_not_asked_about():
    confirmed = with_side_effect_confirmed(IMPORTED, "readonly")

    post = http(method="POST")

    assert "side-effect-unconfirmed" not in lint(side_effect="readonly", source=confirmed, **post)
    assert "side-effect-unconfirmed" not in lint(side_effect="write", **post)
    # changed after the confirmation: asked again
    assert "side-effect-unconfirmed" in lint(side_effect="write", source=confirmed, **post)


# optional fields whose default changes the meaning

def test_an_optional_limit_or_state_filter_suggests_requiring_it():
    parameters = closed({"q": {"type": "string", "description": "Words."},
                         "limit": {"type": "integer", "description": "How many."},
                         "state": {"enum": ["open", "closed"], "description": "Which."}}, ["q"])

    found = lint(parameters, strict=False)

    assert found["optional-changes-meaning"] == [
        ("warning", "parameters/properties/limit"), ("warning", "parameters/properties/state"),
    ]
    assert "optional-changes-meaning" not in lint(closed(parameters["properties"]), strict=False)
