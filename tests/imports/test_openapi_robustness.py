"""One odd spot never sinks a document: what ToolHub cannot read in one operation skips that
operation with the place and the reason, everything else imports; no input gives a
traceback. Each case is a small document of our own with the spot real documents have."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apps.catalog.models import Tool, ToolVersion
from apps.common.schemas.patterns import FORMAT_CHECKER, ToolSchemaValidator
from apps.imports.openapi import OpenAPIError, document_operations, parse_document
from apps.imports.openapi_services import openapi_import
from tests.factories import TenantFactory

from .hostile_documents import document

pytestmark = pytest.mark.django_db

OK = {"200": {"description": "ok"}}
LIST_ITEMS = {"get": {"operationId": "listItems", "responses": OK}}


@pytest.fixture
def tenant():
    return TenantFactory(slug="acme")


def _import(tenant, doc: dict[str, Any]):
    return openapi_import(tenant=tenant, document_text=json.dumps(doc), upstream="items", actor="curator")


def _body(schema: dict[str, Any], operation_id: str = "createItem", **media: Any) -> dict[str, Any]:
    return {"post": {
        "operationId": operation_id, "responses": OK,
        "requestBody": {"required": True, "content": {"application/json": {"schema": schema, **media}}},
    }}


def _parameters(name: str) -> dict[str, Any]:
    return ToolVersion.objects.get(tool__name=name).parameters


def _accepts(name: str, arguments: dict[str, Any]) -> bool:
    return ToolSchemaValidator(_parameters(name), format_checker=FORMAT_CHECKER).is_valid(arguments)


def test_a_ref_key_inside_example_default_enum_and_const_values_is_data(tenant):
    # given: GitHub's SCIM examples hold members written {"$ref": "https://..."}
    member = {"value": "u1", "$ref": "https://api.example.com/scim/Users/u1"}
    schema = {"type": "object", "properties": {
        "members": {"type": "array", "items": {"type": "object"}, "example": [member], "default": [member]},
        "kind": {"enum": [{"$ref": "#/nowhere"}, "plain"]},
        "fixed": {"const": {"$ref": "elsewhere.json"}},
        "default": {"$ref": "#/components/schemas/Name"},  # a property called "default" is a schema
    }}
    examples = {"scim": {"$ref": "#/components/examples/Group"}}
    doc = document({"/groups": _body(schema, "createGroup", examples=examples)}, components={
        "schemas": {"Name": {"type": "string"}},
        "examples": {"Group": {"value": {"members": [member]}}},
    })

    # when
    report = _import(tenant, doc)

    # then
    assert [r.summary for r in report.results] == ["new"]
    properties = _parameters("create_group")["properties"]
    assert properties["members"]["default"] == [member]
    assert properties["default"]["type"] == "string"
    given = {"members": [member], "kind": "plain", "fixed": {"$ref": "elsewhere.json"}, "default": "x"}
    assert _accepts("create_group", given)


def test_a_31_document_with_recursive_and_dynamic_anchors_imports_a_finite_schema(tenant):
    # given: a 2019-09 tree ($recursiveAnchor) and a 2020-12 one ($dynamicAnchor, with $defs)
    tree_2019 = {"$recursiveAnchor": True, "type": "object", "properties": {
        "name": {"type": "string"}, "children": {"type": "array", "items": {"$recursiveRef": "#"}},
    }}
    tree_2020 = {"$dynamicAnchor": "node", "type": "object", "$defs": {"Label": {"type": "string"}},
                 "properties": {"label": {"$ref": "#/components/schemas/Tree2020/$defs/Label"},
                                "children": {"type": "array", "items": {"$dynamicRef": "#node"}}}}
    doc = document({
        "/old-trees": _body({"$ref": "#/components/schemas/Tree2019"}, "plantOldTree"),
        "/trees": _body({"$ref": "#/components/schemas/Tree2020"}, "plantTree"),
    }, components={"schemas": {"Tree2019": tree_2019, "Tree2020": tree_2020}})

    # when
    report = _import(tenant, doc)

    # then: both import, three levels deep, then any value (the upstream checks deeper ones)
    assert [r.summary for r in report.results] == ["new", "new"]
    stored = json.dumps(_parameters("plant_tree")) + json.dumps(_parameters("plant_old_tree"))
    assert not any(k in stored for k in ("$dynamic", "$recursive", "$defs", "$ref"))
    child = {"name": "c", "children": []}
    assert _accepts("plant_old_tree", {"name": "root", "children": [{"name": "a", "children": [child]}]})
    assert not _accepts("plant_old_tree", {"name": "root", "children": [{"name": 5, "children": []}]})
    deepest = {"label": "b", "children": [{"beyond": "three levels"}]}
    assert _accepts("plant_tree", {"label": "root", "children": [{"label": "a", "children": [deepest]}]})
    assert not _accepts("plant_tree", {"label": "root", "children": [{"label": "a", "children": [{"x": 1}]}]})
    assert not _accepts("plant_tree", {"label": 1, "children": []})


def test_a_recursive_ref_is_copied_three_levels_deep(tenant):
    # given: a tree whose children are trees
    tree = {"type": "object", "properties": {"name": {"type": "string"}, "children": {
        "type": "array", "items": {"$ref": "#/components/schemas/Tree"}}}}
    doc = document({"/trees": _body({"$ref": "#/components/schemas/Tree"}, "plantTree")},
                   components={"schemas": {"Tree": tree}})

    # when
    _import(tenant, doc)

    # then
    level = _parameters("plant_tree")
    for _ in range(3):
        level = level["properties"]["children"]
        level = next(t for t in level.get("anyOf", [level]) if t.get("type") != "null")["items"]
    assert level == {"description": "Nested like #/components/schemas/Tree again; ToolHub does not check "
                                    "values this deep."}


def test_a_recursive_schema_too_large_once_copied_skips_only_its_operation(tenant, settings):
    # given: a tree of 40 fields whose children are trees, within the limit written once,
    # past it copied three levels deep
    settings.TOOLHUB_IMPORT_MAX_SCHEMA_NODES = 200
    fields = {f"f{n}": {"type": "string"} for n in range(40)}
    tree = {"type": "object", "properties": {**fields, "children": {
        "type": "array", "items": {"$ref": "#/components/schemas/Tree"}}}}
    plant = _body({"$ref": "#/components/schemas/Tree"}, "plantTree")
    doc = document({"/trees": plant, "/items": LIST_ITEMS}, components={"schemas": {"Tree": tree}})

    # when
    report = _import(tenant, doc)

    # then
    planted, listed = report.results
    assert planted.outcome == "skipped" and "its recursive schema is copied 3 levels deep" in planted.reason
    assert "TOOLHUB_IMPORT_MAX_SCHEMA_NODES" in planted.reason
    assert listed.outcome == "new"


@pytest.mark.parametrize("header", ["Accept", "Content-Type", "Host"])
def test_a_header_parameter_http_sets_itself_no_longer_refuses_the_document(header):
    # given: optional Accept / Content-Type / Host header parameters (the draft leaves them out)
    parameters = [{"name": header, "in": "header", "schema": {"type": "string"}}]
    doc = document({"/items": {"get": {**LIST_ITEMS["get"], "parameters": parameters}}})

    # when
    [operation] = document_operations(parse_document(json.dumps(doc)))

    # then
    assert operation.normalized["parameters"] == parameters


BROKEN_OPERATIONS = {
    "a $ref to nothing": (
        {"parameters": [{"$ref": "#/components/parameters/Gone"}]},
        "/paths/~1broken/post/parameters/0: $ref '#/components/parameters/Gone' cannot be resolved",
    ),
    "a $ref to another file": (
        {"parameters": [{"$ref": "common.yaml#/Limit"}]},
        "/paths/~1broken/post/parameters/0: $ref to 'common.yaml' points outside the document",
    ),
    "a parameter without `in`": (
        {"parameters": [{"name": "limit", "schema": {"type": "integer"}}]},
        "/paths/~1broken/post/parameters/0/in: must be path, query, header or cookie",
    ),
    "parameters that are no list": (
        {"parameters": {"name": "limit"}}, "/paths/~1broken/post/parameters: parameters must be a list",
    ),
    "a summary that is a number": ({"summary": 5}, "/paths/~1broken/post/summary: must be text, not int"),
    "a parameter required 'yes'": (
        {"parameters": [{"name": "q", "in": "query", "required": "yes"}]},
        "/paths/~1broken/post/parameters/0/required: must be true or false, not str",
    ),
    "a body whose media type is a list": (
        {"requestBody": {"content": {"application/json": []}}},
        "/paths/~1broken/post/requestBody/content/application~1json: a media type must be an object",
    ),
    "a schema whose type is misspelt": (
        {"requestBody": {"content": {"application/json": {"schema": {
            "type": "object", "properties": {"n": {"type": "strnig"}}}}}}},
        "not valid JSON Schema at /properties/n/type",
    ),
    "a schema whose enum is no list": (
        {"requestBody": {"content": {"application/json": {"schema": {
            "type": "object", "properties": {"n": {"type": "string", "enum": "ab"}}}}}}},
        "has enum 'ab', which is not a list",
    ),
    "a required name that is an object": (
        {"requestBody": {"content": {"application/json": {"schema": {
            "type": "object", "required": [{"n": 1}], "properties": {"n": {"type": "string"}}}}}}},
        "not valid JSON Schema at /required/0",
    ),
    "a $dynamicRef without its anchor": (
        {"requestBody": {"content": {"application/json": {"schema": {
            "type": "object", "properties": {"n": {"$dynamicRef": "#node"}}}}}}},
        "$dynamicRef '#node' cannot be resolved: no schema around it declares its $dynamicAnchor",
    ),
    "an operationId that is a number": ({"operationId": 7}, "/paths/~1broken/post/operationId: must be text"),
}


@pytest.mark.parametrize("case", list(BROKEN_OPERATIONS))
def test_a_broken_operation_is_skipped_naming_where_and_the_others_import(tenant, case):
    # given
    breakage, said = BROKEN_OPERATIONS[case]
    broken = {"operationId": "brokenOne", "responses": OK, **breakage}
    doc = document({"/broken": {"post": broken}, "/items": LIST_ITEMS})

    # when
    report = _import(tenant, doc)

    # then
    skipped, imported = report.results
    assert skipped.outcome == "skipped" and said in skipped.reason, skipped.reason
    assert (imported.key, imported.outcome) == ("listItems", "new")
    assert set(Tool.objects.values_list("name", flat=True)) == {"list_items"}


def test_a_path_template_without_its_parameter_skips_only_that_operation(tenant):
    doc = document({"/items/{id}": {"delete": {"operationId": "deleteItem", "responses": OK}},
                    "/items": LIST_ITEMS})

    report = _import(tenant, doc)

    assert [r.summary for r in report.results] == [
        "skipped: /paths/~1items~1{id}/delete: the path names {id} but no path parameter 'id'.", "new",
    ]


def test_a_broken_path_item_and_a_second_use_of_an_operation_id_skip_only_those(tenant):
    doc = document({"items": LIST_ITEMS, "/things": "nothing", "/items": LIST_ITEMS,
                    "/more-items": LIST_ITEMS, "x-generated-by": {"tool": "an extension, not a path"}})

    report = _import(tenant, doc)

    assert [(r.key, r.summary) for r in report.results] == [
        ("items", "skipped: /paths/items: a path must start with '/', not 'items'."),
        ("/things", "skipped: /paths/~1things: a path item must be an object."),
        ("listItems", "new"),
        ("GET /more-items", "skipped: /paths/~1more-items/get/operationId: 'listItems' is also the "
                            "operationId at /paths/~1items/get."),
    ]


@pytest.mark.parametrize(("text", "said"), [
    (b"openapi: [unclosed\n", "neither JSON nor YAML"),
    (json.dumps({"swagger": "2.0"}).encode(), "/openapi: ToolHub imports OpenAPI 3.0 and 3.1, this is sw"),
    (json.dumps(document(paths=[])).encode(), "/paths: must be an object of paths"),
])
def test_a_problem_of_the_whole_document_still_refuses_it_naming_where(tenant, text, said):
    with pytest.raises(OpenAPIError, match=said):
        openapi_import(tenant=tenant, document_text=text, upstream="items", actor="curator")

    assert not Tool.objects.exists()
