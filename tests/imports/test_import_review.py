"""The review an import hands its curator: a finding most drafts have is said once with how
many and which tools, each draft keeps its own, and the version's lint page lists them all."""

from __future__ import annotations

import copy
import io
import json

import pytest
from django.core.management import call_command

from apps.catalog.models import ToolVersion
from apps.catalog.selectors import version_findings
from apps.imports.openapi_services import openapi_import
from apps.imports.review import CommonFinding, ImportReview, import_review
from tests.factories import TenantFactory

from .review_document import NOTES, notes_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenant():
    return TenantFactory(slug="acme")


def test_the_command_says_a_finding_of_every_draft_once_with_its_count_and_tools(tenant, tmp_path):
    out = io.StringIO()

    call_command("import_openapi", str(notes_file(tmp_path)), "--tenant", "acme", "--upstream", "notes",
                 stdout=out)

    printed = out.getvalue()
    assert printed.count("description-without-when-not") == 1
    assert "warning description-without-when-not on 5 of 5 drafts: Add a sentence like" in printed
    assert "list_notes, create_note, search_notes, get_note, delete_note" in printed
    # three writes of five: said once too
    assert printed.count("side-effect-unconfirmed") == 1
    assert "side-effect-unconfirmed on 3 of 5 drafts" in printed
    # a finding of one draft stays under it
    under_create = "create_note v1 (draft)\n      warning undescribed-parameter at parameters/properties/tag"
    assert under_create in printed


def test_the_versions_own_lint_still_lists_every_finding(tenant):
    openapi_import(tenant=tenant, document_text=json.dumps(NOTES),
                   upstream="notes", actor="curator")

    version = ToolVersion.objects.get(tool__name="search_notes")
    codes = {f.code for f in version_findings(version=version)}
    assert {"description-without-when-not", "side-effect-unconfirmed"} <= codes


def test_findings_of_few_drafts_and_errors_are_never_grouped(tenant):
    document = copy.deepcopy({**NOTES, "paths": {"/notes": NOTES["paths"]["/notes"]}})
    # an undescribed identity field: an error, on that draft only
    document["paths"]["/notes"]["get"] = {
        **document["paths"]["/notes"]["get"],
        "parameters": [{"name": "owner_id", "in": "query", "schema": {"type": "string"}}],
    }
    report = openapi_import(tenant=tenant, document_text=json.dumps(document),
                            upstream="notes", actor="curator")

    review = import_review(report.results)
    assert review.common == ()  # two drafts are no pattern
    by_tool = {r.tool: review.own(r) for r in report.results}
    assert ("error", "identity-not-bound") in {(f.severity, f.code) for f in by_tool["list_notes"]}


def test_the_command_names_the_first_tools_of_a_finding_and_counts_the_rest():
    tools = tuple(f"tool_{n:02}" for n in range(30))
    common = CommonFinding(severity="warning", code="description-without-when-not", why="…",
                           fix="Add a sentence like 'Do not use it to …'.", tools=tools, of=30)

    [_, line] = ImportReview(common=(common,)).lines()

    assert line.endswith("tool_00, tool_01, tool_02, tool_03, tool_04, tool_05, tool_06, tool_07, "
                         "tool_08, tool_09, tool_10, tool_11 and 18 more")
