"""The conformance harness end to end on a document of our own: imported, called through
REST invoke, and each request checked by the loopback upstream (what `make conformance`
does with the real documents)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conformance.harness import RunOptions, run_document
from conformance.report import failure_lines, headline, table
from conformance.upstream import ValidatingUpstream, validating_upstream
from conformance.validation import DocumentValidator, RawRequest

FIXTURE = Path(__file__).with_name("orders.json")


@pytest.fixture
def upstream() -> Iterator[ValidatingUpstream]:
    with validating_upstream() as running:
        yield running


@pytest.mark.django_db(transaction=True)
def test_every_imported_operation_is_called_and_its_request_checked(upstream):
    result = run_document(FIXTURE, upstream, RunOptions(seed=1), slug="conformance-orders")

    assert headline(result) == "orders.json: operations imported 3/4, requests valid 3/3"
    # The one operation the import cannot express (a file upload) is a failure line with the
    # import's reason.
    (skipped,) = failure_lines(result)
    assert skipped.startswith("  skipped: putLabel: ")
    assert "application/octet-stream" in skipped
    rows = table([result]).splitlines()
    assert rows[0].split() == ["document", "imported", "%", "lint-blocked", "not", "generated", "valid/sent",
                               "%", "valid", "invoke", "errors", "seconds"]
    assert rows[2].split()[:8] == ["orders.json", "3/4", "75.0", "0", "0", "3/3", "100.0", "0"]


def test_a_request_the_document_does_not_allow_is_recorded_with_the_validators_message(upstream):
    upstream.validator = DocumentValidator(json.loads(FIXTURE.read_text()), base_path="/v1")

    httpx.get(f"{upstream.url}/v1/orders", params={"status": "lost"})
    httpx.get(f"{upstream.url}/v1/orders/12")

    invalid, valid = upstream.take()
    assert invalid.target == "/v1/orders?status=lost"
    message = "Invalid query parameter: status: [0] 'lost' is not one of ['paid', 'shipped']"
    assert invalid.errors == (message,)
    assert valid.errors == ()


SEARCH = {
    "openapi": "3.0.3",
    "info": {"title": "Search", "version": "1"},
    "paths": {"/charges": {"get": {
        "parameters": [
            {"name": "created", "in": "query", "style": "deepObject", "explode": True, "schema": {"anyOf": [
                {"type": "object", "properties": {"gte": {"type": "integer"}}, "additionalProperties": False},
                {"type": "integer"},
            ]}},
            {"name": "expand", "in": "query", "style": "deepObject", "explode": True,
             "schema": {"type": "array", "items": {"type": "string"}}},
            {"name": "limit", "in": "query", "schema": {"type": "integer"}},
        ],
        "responses": {"200": {"description": "The charges."}},
    }}},
}


@pytest.mark.parametrize(("query", "errors"), [
    # deepObject in Stripe's bracket notation: objects, arrays, and the scalar of an anyOf
    ("created[gte]=1&expand[]=a&expand[]=b&limit=3", []),
    ("created=1", []),
    # what ToolHub sent before it knew deepObject: JSON text, a repeated plain name
    ("created=%7B%22gte%22%3A1%7D",
     ["Invalid query parameter: created: '{\"gte\":1}' is not valid under any of the given schemas"]),
    ("expand=a&expand=b", ["Query parameter error: expand: Failed to cast value to array type: a"]),
    ("created[lt]=1",
     ["Invalid query parameter: created: {'lt': '1'} is not valid under any of the given schemas"]),
    # a name the operation does not declare, which openapi-core alone lets pass
    ("limit=3&page=2", ["Unknown query parameter 'page' (the operation has created, expand, limit)"]),
])
def test_the_validator_reads_deep_objects_as_brackets_and_refuses_unknown_names(query, errors):
    validator = DocumentValidator(SEARCH, base_path="")

    assert validator.errors(RawRequest("GET", f"/charges?{query}", {}, b"")) == errors


def test_a_value_the_parameters_style_cannot_read_says_so():
    lookup = {
        "openapi": "3.0.3", "info": {"title": "Lookup", "version": "1"},
        "paths": {"/numbers": {"get": {
            "parameters": [{"name": "AddOnsData", "in": "query", "style": "form", "explode": True,
                            "schema": {"type": "object", "additionalProperties": True}}],
            "responses": {"200": {"description": "The number."}},
        }}},
    }
    validator = DocumentValidator(lookup, base_path="")

    errors = validator.errors(RawRequest("GET", "/numbers?AddOnsData=%7B%22a%22%3A1%7D", {}, b""))

    assert errors == [
        "Query parameter error: AddOnsData: the value as sent cannot be read in form style for its schema"
    ]


@pytest.mark.django_db(transaction=True)
def test_a_traceback_in_the_import_is_a_crash_line_and_the_run_goes_on(upstream, monkeypatch):
    def broken_import(**kwargs):
        raise RuntimeError("the importer fell over")

    monkeypatch.setattr("conformance.harness.openapi_import", broken_import)

    result = run_document(FIXTURE, upstream, RunOptions(seed=1), slug="conformance-crash")

    (line,) = failure_lines(result)
    assert line.startswith("  crash: orders.json: Traceback (most recent call last):\n    ")
    assert line.endswith("RuntimeError: the importer fell over")
    assert headline(result) == "orders.json: operations imported 0/4, requests valid 0/0"


CUSTOMERS = {
    "openapi": "3.0.3",
    "info": {"title": "Customers", "version": "1"},
    "paths": {"/customers": {"post": {
        "requestBody": {"content": {"application/x-www-form-urlencoded": {
            "schema": {"type": "object", "additionalProperties": False, "properties": {
                "email": {"type": "string"},
                "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                "currency_options": {"type": "object", "additionalProperties": {
                    "type": "object", "properties": {"amount": {"type": "integer"}},
                }},
                "items": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False,
                    "properties": {"price": {"type": "string"}, "quantity": {"type": "integer"}},
                }},
            }},
            "encoding": {"metadata": {"style": "deepObject", "explode": True},
                         "currency_options": {"style": "deepObject", "explode": True},
                         "items": {"style": "deepObject", "explode": True}},
        }}},
        "responses": {"200": {"description": "The customer."}},
    }}},
}
FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.mark.parametrize(("body", "headers", "errors"), [
    (b"email=a%40example.com&metadata[order_id]=ORD-1&items[0][price]=p&items[0][quantity]=2", FORM, []),
    (b'{"email": "a@example.com"}', {"content-type": "application/json"},
     ["Request body validation error: Content for the following mimetype not found: application/json. "
      "Valid mimetypes: ['application/x-www-form-urlencoded']"]),
    # a map's values are cast by its schema too (casting.py): an integer in Stripe's currency_options
    (b"currency_options[eur][amount]=913", FORM, []),
    (b"currency_options[eur][amount]=lots", FORM,
     ["Request body validation error: Failed to cast value to integer type: lots"]),
    (b"items[0][quantity]=two", FORM,
     ["Request body validation error: Failed to cast value to integer type: two"]),
])
def test_form_bodies_are_read_with_their_encoding_in_brackets(body, headers, errors):
    validator = DocumentValidator(CUSTOMERS, base_path="")

    assert validator.errors(RawRequest("POST", "/customers", headers, body)) == errors
