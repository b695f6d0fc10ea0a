"""Big documents: the size limit, bulk writes whatever the number of operations, the
command's progress, and what a re-import says of the operations the API removed."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.core.management.base import OutputWrapper

from apps.audit.models import AuditEvent
from apps.catalog.models import ToolVersion, VersionStatus
from apps.imports.errors import ImportRefused
from apps.imports.limits import ImportLimitExceeded
from apps.imports.management.commands._import_cli import ProgressBar
from apps.imports.openapi_services import openapi_import
from tests.factories import TenantFactory
from tests.imports.big_documents import many_operations

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenant():
    return TenantFactory(slug="acme")


def _command(path, *args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_openapi", str(path), "--tenant", "acme", "--upstream", "items", *args,
                 stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_a_document_over_the_size_limit_is_refused_naming_the_limit_and_setting(tenant, tmp_path, settings):
    settings.TOOLHUB_IMPORT_MAX_DOCUMENT_BYTES = 10_000
    path = tmp_path / "items.json"
    path.write_bytes(many_operations(1, padding_bytes=20_000))

    with pytest.raises(CommandError) as refused:
        _command(path)

    said = "larger than the 10000 bytes an import reads (TOOLHUB_IMPORT_MAX_DOCUMENT_BYTES)"
    assert said in str(refused.value)
    with pytest.raises(ImportLimitExceeded, match="TOOLHUB_IMPORT_MAX_DOCUMENT_BYTES"):
        openapi_import(tenant=tenant, document_text=path.read_bytes(), upstream="items", actor="test")
    assert not ToolVersion.objects.exists()


def test_a_20_mb_document_imports_within_the_default_limit(tenant):
    document = many_operations(2, padding_bytes=20 * 1024 * 1024)

    report = openapi_import(tenant=tenant, document_text=document, upstream="items", actor="test")

    assert [r.outcome for r in report.results] == ["new", "new"]


def test_a_document_of_a_few_mb_imports_in_a_bounded_number_of_queries(tenant, django_assert_max_num_queries):
    document = many_operations(400, description_bytes=6_000)
    assert len(document) > 2_500_000

    # Per import, not per operation: reads, locks, one INSERT per 500 tools, drafts, audit events.
    with django_assert_max_num_queries(40):
        report = openapi_import(tenant=tenant, document_text=document, upstream="items", actor="test")

    assert [r.outcome for r in report.results] == ["new"] * 400
    assert ToolVersion.objects.filter(tool__tenant=tenant, status=VersionStatus.DRAFT).count() == 400
    # and so does a re-import where nothing changed
    with django_assert_max_num_queries(40):
        again = openapi_import(tenant=tenant, document_text=document, upstream="items", actor="test")
    assert {r.outcome for r in again.results} == {"unchanged"}


def test_the_command_shows_its_progress_in_plain_lines_off_a_terminal(tenant, tmp_path):
    path = tmp_path / "items.json"
    path.write_bytes(many_operations(20))

    out, err = _command(path)

    assert "getItem19: new → get_item19 v1 (draft)" in out
    lines = [line for line in err.splitlines() if line.endswith("operations imported")]
    assert lines[0] == "2/20 operations imported" and lines[-1] == "20/20 operations imported"
    assert "\r" not in err


def test_a_reimport_lists_the_operations_the_api_removed_and_deprecates_them_on_request(tenant, tmp_path):
    path = tmp_path / "items.json"
    path.write_bytes(many_operations(3))
    _command(path, "--publish")
    path.write_bytes(many_operations(3, without=(1,)))

    out, err = _command(path)

    assert "No longer in the document (the API removed them):\n  getItem1: get_item1 (published v1)" in out
    assert "deprecate them with --deprecate-removed" in err
    assert ToolVersion.objects.get(tool__name="get_item1").status == VersionStatus.PUBLISHED

    out, _ = _command(path, "--deprecate-removed")

    assert "  getItem1: get_item1 (deprecated v1)" in out
    assert ToolVersion.objects.get(tool__name="get_item1").status == VersionStatus.DEPRECATED
    assert ToolVersion.objects.get(tool__name="get_item0").status == VersionStatus.PUBLISHED


def test_an_import_of_chosen_operations_says_nothing_of_the_others(tenant, tmp_path):
    path = tmp_path / "items.json"
    path.write_bytes(many_operations(3))
    _command(path)

    out, _ = _command(path, "--operations", "getItem0")

    assert "No longer in the document" not in out


def test_swagger_2_is_refused_naming_a_converter(tenant):
    document = b'{"swagger": "2.0", "info": {"title": "Old", "version": "1"}, "paths": {}}'

    with pytest.raises(ImportRefused) as refused:
        openapi_import(tenant=tenant, document_text=document, upstream="items", actor="test")

    assert "this is swagger 2.0. Convert it to OpenAPI 3.0 first (`npx swagger2openapi" in str(refused.value)


def test_publishing_the_drafts_of_many_operations_is_bounded_too(tenant, django_assert_max_num_queries):
    document = many_operations(200)

    with django_assert_max_num_queries(50):
        report = openapi_import(tenant=tenant, document_text=document, upstream="items", actor="test",
                                publish=True)

    assert {r.version.status for r in report.results} == {VersionStatus.PUBLISHED}
    assert AuditEvent.objects.filter(action="tool_version.publish", note="Published by the OpenAPI import.",
                                     data__from_status="draft").count() == 200


def test_on_a_terminal_the_progress_is_one_bar_redrawn_in_place():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    bar = ProgressBar(OutputWrapper(screen))

    bar(1, 4)
    bar(4, 4)

    assert screen.getvalue() == (f"\r[{'#' * 7}{'.' * 23}] 1/4 operations"
                                 f"\r[{'#' * 30}] 4/4 operations\n")
