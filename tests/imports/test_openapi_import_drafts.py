"""What the import does when a draft meets the version's own checks: one operation they refuse
is skipped, not the document; a re-import's new schema meets the version's `strict` (issue 20)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apps.catalog.models import ToolVersion
from apps.imports.openapi_services import openapi_import
from apps.imports.schemas import strict
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def _document(*, tag_description: str = "", extra: tuple[dict[str, Any], ...] = ()) -> str:
    """Two operations: `getThing`, which maps, and `badHeader`, whose header name (a space in
    it) the http config refuses; `tag_description` and `extra` parameters change getThing."""
    tag = {"name": "tag", "in": "query", "schema": {"type": "string"}}
    if tag_description:
        tag["description"] = tag_description
    return json.dumps({
        "openapi": "3.1.0", "info": {"title": "Things", "version": "1"},
        "servers": [{"url": "https://things.example"}],
        "paths": {
            "/things/{thing_id}": {"get": {
                "operationId": "getThing",
                "parameters": [
                    {"name": "thing_id", "in": "path", "required": True, "schema": {"type": "string"}},
                    tag, *extra,
                ],
                "responses": {"200": {"description": "The thing."}},
            }},
            "/odd": {"get": {
                "operationId": "badHeader",
                "parameters": [{"name": "X Odd", "in": "header", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "Odd."}},
            }},
        },
    })


def _import(tenant, text: str, **options):
    return openapi_import(tenant=tenant, upstream="things", actor="curator", document_text=text, **options)


def test_an_operation_whose_draft_the_version_refuses_is_skipped_with_the_reason_and_the_others_import():
    tenant = TenantFactory(slug="acme")

    report = _import(tenant, _document())

    results = {r.key: r for r in report.results}
    assert results["getThing"].outcome == "new"
    assert ToolVersion.objects.filter(tool__tenant=tenant, tool__name="get_thing").exists()
    assert results["badHeader"].outcome == "skipped"
    assert results["badHeader"].reason.startswith("operation badHeader cannot become a draft: ")
    assert "X Odd" in results["badHeader"].reason
    assert not ToolVersion.objects.filter(tool__tenant=tenant, tool__name="bad_header").exists()


def _imported_strict_before(tenant) -> ToolVersion:
    """getThing imported, then made what an import made before optional arguments stayed
    optional: strict, its schema in the strict form."""
    report = _import(tenant, _document(), operation_ids=["getThing"])
    version = ToolVersion.objects.get(pk=report.results[0].version.pk)
    ToolVersion.objects.filter(pk=version.pk).update(strict=True, parameters=strict(version.parameters))
    return ToolVersion.objects.get(pk=version.pk)


def _reimported(tenant, text: str) -> ToolVersion:
    [result] = _import(tenant, text, operation_ids=["getThing"]).results
    assert result.outcome == "changed", result.summary
    assert not [f.code for f in result.findings if f.code == "optional-in-strict"]
    return ToolVersion.objects.get(pk=result.version.pk)


def test_a_reimport_turns_off_the_strict_an_import_made_when_the_schema_changes():
    tenant = TenantFactory(slug="acme")
    _imported_strict_before(tenant)

    size = {"name": "size", "in": "query", "schema": {"type": "integer"}}
    draft = _reimported(tenant, _document(extra=(size,)))

    assert draft.strict is False
    assert draft.parameters["required"] == ["thing_id"]
    assert "Strict turned off" in draft.changelog


def test_a_reimport_keeps_a_curators_strict_and_gives_the_new_schema_in_the_strict_form():
    tenant = TenantFactory(slug="acme")
    version = _imported_strict_before(tenant)
    # the curator's own schema: the strict flag beside it is theirs
    edited = {**version.parameters, "description": "Look up one thing."}
    ToolVersion.objects.filter(pk=version.pk).update(parameters=edited)

    draft = _reimported(tenant, _document(tag_description="Only things with this tag."))

    assert draft.strict is True
    assert sorted(draft.parameters["required"]) == ["tag", "thing_id"]
    assert draft.parameters["properties"]["tag"]["type"] == ["string", "null"]
    assert "stays strict" in draft.changelog
