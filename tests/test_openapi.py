"""The OpenAPI schema documents the agent API completely enough to test against."""

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.common.errors import REPAIR_FIELDS

CONTRACT = Path(__file__).resolve().parents[1] / "docs" / "contract.md"


def _contract_table(heading: str) -> list[str]:
    """The first column of the table that follows `heading` in docs/contract.md."""
    text = CONTRACT.read_text().split(heading, 1)[1]
    table = re.search(r"\n\|[^\n]*\|\n\|[-| ]+\|\n((?:\|[^\n]*\n)+)", text)
    assert table, f"no table after {heading!r} in docs/contract.md"
    return [row.split("|")[1].strip().strip("`") for row in table[1].splitlines()]


def test_the_schema_generates_without_a_warning():
    out = StringIO()

    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)

    assert "/api/v1/invoke:" in out.getvalue()


@pytest.mark.django_db
def test_invoke_documents_the_envelope_and_the_error_statuses(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()

    invoke = schema["paths"]["/api/v1/invoke"]["post"]
    assert set(invoke["responses"]) >= {"200", "202", "400", "401", "413", "429", "503"}
    envelope = schema["components"]["schemas"]["Envelope"]["properties"]
    assert {"status", "call_id", "kind", "recoverable", "message", "hint", "details", "truncated"} <= set(
        envelope
    )
    assert any(p["name"] == "X-ToolHub-Session" for p in invoke["parameters"])
    assert set(schema["paths"]) >= {
        "/api/v1/invoke",
        "/api/v1/invoke/batch",
        "/api/v1/executions/{execution_id}",
        "/api/v1/sessions",
    }


@pytest.mark.django_db
def test_the_schema_and_the_contract_name_the_same_error_kinds_statuses_and_extras(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()

    envelope = schema["components"]["schemas"]["Envelope"]["properties"]
    kinds = set(schema["components"]["schemas"]["KindEnum"]["enum"])
    invoke = schema["paths"]["/api/v1/invoke"]["post"]
    assert kinds == set(_contract_table("Error kinds, a fixed set:"))
    assert set(invoke["responses"]) <= set(_contract_table("HTTP statuses:"))
    assert {"suggestions", "available_in", "retry_after_s", "error_id", "poll", "cached"} <= set(envelope)


@pytest.mark.django_db
def test_the_schema_and_the_contract_name_the_same_fields_of_a_detail(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()

    envelope = schema["components"]["schemas"]["Envelope"]["properties"]
    detail = schema["components"]["schemas"][envelope["details"]["items"]["$ref"].rsplit("/", 1)[1]]
    assert set(detail["properties"]) == {"path", "problem", *_contract_table("Fields of a detail:")}
    assert set(detail["required"]) == {"path", "problem"}
    assert set(REPAIR_FIELDS) == set(_contract_table("Fields of a detail:"))
