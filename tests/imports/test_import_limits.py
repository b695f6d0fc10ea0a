"""Documents written to hurt the importer are refused quickly, naming the place and the limit,
and leave nothing behind: through the service and through `manage.py import_openapi`."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.audit.models import AuditEvent
from apps.catalog.models import Tool, ToolVersion
from apps.imports.errors import ImportRefused
from apps.imports.openapi_services import openapi_import
from apps.upstreams.models import Upstream
from tests.factories import TenantFactory

from .hostile_documents import HOSTILE, many_operations, ref_bomb, ref_chain, shared_body

pytestmark = pytest.mark.django_db

PETSTORE = Path(__file__).parent / "documents" / "petstore.yaml"


@pytest.fixture
def tenant():
    return TenantFactory(slug="acme")


def nothing_was_stored() -> bool:
    return not (Tool.objects.exists() or ToolVersion.objects.exists() or Upstream.objects.exists()
                or AuditEvent.objects.filter(action="openapi.import").exists())


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_document_is_refused_quickly_naming_the_place(tenant, case):
    # given
    hostile = HOSTILE[case]
    started = time.monotonic()

    # when
    with pytest.raises(ImportRefused) as refused:
        openapi_import(tenant=tenant, document_text=hostile.text, upstream="hostile", actor="curator")

    # then
    elapsed = time.monotonic() - started
    for said in hostile.says:
        assert said in str(refused.value), str(refused.value)
    assert "Traceback" not in str(refused.value)
    assert elapsed < 3, f"{case} took {elapsed:.1f} s"
    assert nothing_was_stored()


@pytest.mark.parametrize("case", list(HOSTILE))
def test_the_command_refuses_a_hostile_document_naming_the_place(tenant, case, tmp_path):
    # given
    hostile = HOSTILE[case]
    spec = tmp_path / "hostile.json"
    spec.write_bytes(hostile.text)

    # when
    with pytest.raises(CommandError) as refused:
        call_command("import_openapi", str(spec), "--tenant", "acme", "--upstream", "hostile",
                     stdout=io.StringIO(), stderr=io.StringIO())

    # then
    assert str(refused.value).startswith("Nothing was imported.")
    for said in hostile.says:
        assert said in str(refused.value)
    assert nothing_was_stored()


def test_the_limits_are_settings(tenant, settings):
    # given: documents within the default limits (a bomb of 64 copies, a small chain, a few
    # operations sharing a schema)
    settings.TOOLHUB_IMPORT_MAX_SCHEMA_NODES = 100

    # when / then: each is refused at the configured limit, naming it
    with pytest.raises(ImportRefused, match=r"more than 100 nodes \(TOOLHUB_IMPORT_MAX_SCHEMA_NODES\)"):
        openapi_import(tenant=tenant, document_text=ref_bomb(6), upstream="hostile", actor="curator")
    settings.TOOLHUB_IMPORT_MAX_IMPORT_NODES = 100
    together = r"more than 100 nodes together \(TOOLHUB_IMPORT_MAX_IMPORT_NODES\)"
    with pytest.raises(ImportRefused, match=together):
        openapi_import(tenant=tenant, document_text=shared_body(operations=5), upstream="hostile",
                       actor="curator")
    settings.TOOLHUB_IMPORT_MAX_DEPTH = 12
    with pytest.raises(ImportRefused, match=r"deeper than 12 levels \(TOOLHUB_IMPORT_MAX_DEPTH\)"):
        openapi_import(tenant=tenant, document_text=ref_chain(8), upstream="hostile", actor="curator")
    settings.TOOLHUB_IMPORT_MAX_OPERATIONS = 3
    with pytest.raises(ImportRefused, match=r"4 operations.*at most 3 \(TOOLHUB_IMPORT_MAX_OPERATIONS\)"):
        openapi_import(tenant=tenant, document_text=many_operations(4), upstream="hostile", actor="curator")
    assert nothing_was_stored()


def test_within_the_limits_the_same_documents_import_and_publish(tenant):
    # when: a bomb of 6 levels (64 copies) and a chain of 28 objects, as deep as the limit allows
    bomb = openapi_import(tenant=tenant, document_text=ref_bomb(6), upstream="bomb", actor="curator")
    chain = openapi_import(tenant=tenant, document_text=ref_chain(28), upstream="chain", actor="curator",
                           publish=True)

    # then: both expanded into copies, and the deep one is checked, linted and published
    parameters = bomb.results[0].version.parameters
    assert parameters["properties"]["l"]["properties"]["r"]["properties"]["l"]["type"] == "object"
    assert (chain.results[0].outcome, chain.results[0].version.status) == ("new", "published")


def test_selecting_operations_counts_only_those(tenant, settings):
    # given: a document over the limit of operations
    settings.TOOLHUB_IMPORT_MAX_OPERATIONS = 3

    # when: two of its operations are chosen
    report = openapi_import(tenant=tenant, document_text=many_operations(10), upstream="many",
                            actor="curator", operation_ids=["getItem1", "getItem7"])

    # then
    assert [r.tool for r in report.results] == ["get_item1", "get_item7"]


def test_an_import_past_its_time_is_refused_naming_the_limit_and_where_it_stopped(tenant, settings):
    # given
    settings.TOOLHUB_IMPORT_MAX_SECONDS = 0

    # when
    with pytest.raises(ImportRefused) as refused:
        openapi_import(tenant=tenant, document_text=PETSTORE.read_bytes(), upstream="petstore",
                       actor="curator")

    # then
    assert "took longer than 0 s (TOOLHUB_IMPORT_MAX_SECONDS)" in str(refused.value)
    assert "findPets" in str(refused.value)
    assert nothing_was_stored()
