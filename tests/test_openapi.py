"""The OpenAPI schema documents the agent API completely enough to test against."""

from io import StringIO

import pytest
from django.core.management import call_command


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
