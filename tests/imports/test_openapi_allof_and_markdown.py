"""Schemas a model can satisfy (allOf merged into one object) and descriptions a model reads
(HTML as Markdown), on small documents of our own shaped like Asana's and Stripe's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apps.catalog.models import ToolVersion
from apps.common.schemas.patterns import FORMAT_CHECKER, ToolSchemaValidator
from apps.imports.markdown import markdown
from apps.imports.openapi_services import openapi_import
from tests.factories import TenantFactory

from .hostile_documents import document

pytestmark = pytest.mark.django_db

OK = {"200": {"description": "ok"}}


def _import(doc: dict[str, Any]) -> ToolVersion:
    report = openapi_import(tenant=TenantFactory(slug="acme"), document_text=json.dumps(doc),
                            upstream="api", actor="curator")
    [result] = report.results
    assert result.version is not None, result.summary
    return result.version


def _accepts(version: ToolVersion, arguments: dict[str, Any]) -> bool:
    return ToolSchemaValidator(version.parameters, format_checker=FORMAT_CHECKER).is_valid(arguments)


def test_an_allof_of_closed_objects_becomes_one_object_that_takes_every_parts_fields():
    # given: Asana's create_task body: a task's base, extended twice, every part closed
    base = {"type": "object", "additionalProperties": False, "required": ["name"],
            "properties": {"name": {"type": "string"}, "notes": {"type": "string"}}}
    task = {"allOf": [{"$ref": "#/components/schemas/Base"},
                      {"allOf": [{"type": "object", "additionalProperties": False,
                                  "properties": {"due_on": {"type": "string", "format": "date"}}}]},
                      {"type": "object", "additionalProperties": False, "required": ["workspace"],
                       "properties": {"workspace": {"type": "string"}, "name": {"maxLength": 10}}}]}
    doc = document({"/tasks": {"post": {"operationId": "createTask", "responses": OK, "requestBody": {
        "required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Task"}}},
    }}}}, components={"schemas": {"Base": base, "Task": task}})

    # when
    version = _import(doc)

    # then: one object, `required` united, a property of two parts checked by both
    assert version.executor_config["body"] == ["name", "notes", "due_on", "workspace"]
    given = {"name": "Write", "due_on": "2026-12-02", "workspace": "w1"}
    assert _accepts(version, given)
    assert _accepts(version, {**given, "notes": "Before Friday"})
    assert not _accepts(version, {**given, "name": "far more than ten"})
    assert not _accepts(version, {**given, "colour": "red"})
    assert "workspace" in version.parameters["required"]


def test_an_allof_that_cannot_be_merged_is_left_as_written():
    # given: an allOf whose second part is a choice, not a plain object
    schema = {"type": "object", "properties": {"pet": {"allOf": [
        {"type": "object", "properties": {"name": {"type": "string"}}},
        {"oneOf": [{"required": ["name"]}, {"minProperties": 2}]},
    ]}}}
    doc = document({"/pets": {"post": {"operationId": "addPet", "responses": OK, "requestBody": {
        "content": {"application/json": {"schema": schema}}}}}})

    version = _import(doc)

    pet = version.parameters["properties"]["pet"]
    assert len(next(p for p in pet.get("anyOf", [pet]) if "allOf" in p)["allOf"]) == 2
    assert _accepts(version, {"pet": {"name": "Rex"}})


def test_parts_of_an_allof_left_unmerged_do_not_refuse_each_others_properties():
    # given: a part that says more than its properties (minProperties) keeps the allOf
    schema = {"type": "object", "properties": {"pet": {"allOf": [
        {"type": "object", "properties": {"name": {"type": "string"}}},
        {"type": "object", "minProperties": 2, "properties": {"age": {"type": "integer"}}},
    ]}}}
    doc = document({"/pets": {"post": {"operationId": "addPet", "responses": OK, "requestBody": {
        "content": {"application/json": {"schema": schema}}}}}})

    version = _import(doc)

    assert _accepts(version, {"pet": {"name": "Rex", "age": 3}})
    assert not _accepts(version, {"pet": {"name": "Rex", "age": "three"}})
    assert not _accepts(version, {"pet": {"name": "Rex", "age": 3, "colour": "red"}})


def test_alternatives_that_add_properties_to_an_object_stay_satisfiable_once_closed():
    # given: a payment of a kind, then the card's or the bank's fields
    payment = {"type": "object", "required": ["kind"], "properties": {"kind": {"type": "string"}},
               "oneOf": [{"type": "object", "required": [field], "properties": {field: {"type": "string"}}}
                         for field in ("card_number", "iban")]}
    doc = document({"/payments": {"post": {"operationId": "pay", "responses": OK, "requestBody": {
        "required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["payment"], "properties": {"payment": payment}}}}}}}})

    # when
    version = _import(doc)

    # then: each alternative is accepted, a field of neither is not
    assert _accepts(version, {"payment": {"kind": "card", "card_number": "4242", "iban": None}})
    assert _accepts(version, {"payment": {"kind": "bank", "iban": "DE02", "card_number": None}})
    assert not _accepts(version, {"payment": {"kind": "bank", "iban": "DE02", "card_number": None, "x": 1}})


def test_a_lone_allof_gives_its_ref_a_description():
    schema = {"type": "object", "properties": {"currency": {
        "description": "Three-letter ISO code.", "allOf": [{"$ref": "#/components/schemas/Currency"}]}}}
    doc = document({"/prices": {"post": {"operationId": "createPrice", "responses": OK, "requestBody": {
        "content": {"application/json": {"schema": schema}}}}}},
        components={"schemas": {"Currency": {"type": "string", "enum": ["eur", "usd"]}}})

    version = _import(doc)

    assert version.parameters["properties"]["currency"] == {
        "type": "string", "enum": ["eur", "usd"], "description": "Three-letter ISO code.",
    }


def test_html_descriptions_become_markdown_and_plain_ones_stay_as_written():
    # given: Stripe's way of writing descriptions, and a Markdown one that mentions <branch>
    html = ('<p>Creates a <code>refund</code>. See <a href="https://docs.example.com/refunds">refunds</a>.</p>'
            "\n\n<ul>\n<li>Full: the <strong>whole</strong> amount.</li>\n<li>Partial.</li>\n</ul>")
    plain = "Lists refs as `heads/<branch>`.\n\n    indented code\n\nA_B stays."
    doc = document({"/refunds": {"post": {
        "operationId": "createRefund", "summary": "Create a refund", "description": html, "responses": OK,
        "parameters": [{"name": "expand", "in": "query", "description": "<p>Fields to <em>expand</em>.</p>",
                        "schema": {"type": "string"}}],
        "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
            "amount": {"type": "integer", "description": "In the <code>smallest</code> unit."},
            "reason": {"type": "string", "description": plain},
        }}}}},
    }}})

    # when
    version = _import(doc)

    # then
    assert version.description == (
        "Create a refund\n\nCreates a `refund`. See [refunds](https://docs.example.com/refunds).\n\n"
        "- Full: the **whole** amount.\n- Partial."
    )
    properties = version.parameters["properties"]
    assert properties["expand"]["description"] == "Fields to *expand*."
    assert properties["amount"]["description"] == "In the `smallest` unit."
    assert properties["reason"]["description"] == plain


@pytest.mark.parametrize("text", ["", "Plain text, 5 < 6 and a_b_c.", "Use `List<Item>`.\n\n* one\n* two"])
def test_text_without_html_elements_is_unchanged(text):
    assert markdown(text) == text
