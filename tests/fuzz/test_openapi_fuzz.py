"""Schemathesis against ToolHub's own OpenAPI schema: every agent API operation, bounded for CI.

The schema is read from /api/schema/ as clients read it; Schemathesis generates requests
from it (valid and invalid), sends them with a real agent key and session through Django's
test client, and checks every answer: no 5xx, and status, content type, headers and body
as the schema documents them. An undocumented status or shape fails here.

Requests go through Django's test client rather than Schemathesis's WSGI transport: a real
WSGI call ends with request_finished, which closes the test's database connection in the
middle of its transaction. `TOOLHUB_FUZZ_EXAMPLES=500 make test ARGS=tests/fuzz` fuzzes longer.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import requests
import schemathesis
from django.conf import settings as django_settings
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.transport import Response
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.security.conftest import Caller

pytestmark = pytest.mark.django_db

# Per operation and mode: enough to find undocumented statuses and shapes, bounded for CI.
MAX_EXAMPLES = int(os.environ.get("TOOLHUB_FUZZ_EXAMPLES", "25"))
# Not negative_data_rejection: unknown query parameters are ignored on purpose (cache
# busters), and the agent key is added to every request, so dropping it is not negative data.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def _document() -> dict:
    return Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()


def _operations() -> list[str]:
    """The agent API's operations, as Schemathesis labels them ("POST /api/v1/invoke")."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    return [
        f"{method.upper()} {path}"
        for path, methods in document["paths"].items() if path.startswith("/api/v1/")
        for method in methods
    ]


_SET_BY_CLIENT = ("content-type", "content-length")


def _send(client: Client, kwargs: dict) -> Response:
    """One generated request through Django's test client, answered as Schemathesis reads it."""
    prepared = requests.Request(
        method=kwargs["method"], url=kwargs["url"], headers=kwargs.get("headers"),
        params=kwargs.get("params"), json=kwargs.get("json"), data=kwargs.get("data"),
    ).prepare()
    answer = client.generic(
        prepared.method, prepared.path_url, data=prepared.body or b"",
        content_type=prepared.headers.get("Content-Type", ""),
        headers={k: v for k, v in prepared.headers.items() if k.lower() not in _SET_BY_CLIENT},
    )
    return _wrap(answer, prepared.path_url, prepared)


def _wrap(answer: Any, path: str, request: requests.PreparedRequest | None = None) -> Response:
    return Response(
        status_code=answer.status_code,
        headers={name: [value] for name, value in answer.headers.items()},
        content=answer.content,
        request=request or requests.Request("POST", f"http://testserver{path}").prepare(),
        elapsed=0.0,
        verify=False,
    )


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
@pytest.mark.parametrize("label", _operations())
def test_the_agent_api_answers_as_its_schema_says(caller: Caller, recording_tools, label, mode):
    operation = schemathesis.openapi.from_dict(_document()).find_operation_by_label(label)
    headers = {"Authorization": f"Bearer {caller.key}", "X-ToolHub-Session": caller.session}

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def answers_as_documented(case):
        kwargs = case.as_transport_kwargs(base_url="http://testserver", headers=headers)
        response = _send(caller.client, kwargs)
        case.validate_response(response, checks=CHECKS, headers=headers, transport_kwargs=kwargs)

    answers_as_documented()


def test_every_operation_documents_the_errors_the_api_can_answer():
    # The fuzzer sends only what the schema describes, so these come from the exception
    # handler's side: any request can lack a key or meet a database that is down; any body
    # can be too large, or not JSON.
    document = SchemaGenerator().get_schema(request=None, public=True)

    for label in _operations():
        method, path = label.split(" ", 1)
        responses = document["paths"][path][method.lower()]["responses"]
        expected = {"401", "503"} | ({"400", "413", "415"} if method == "POST" else set())
        assert expected <= set(responses), f"{label} does not document {sorted(expected - set(responses))}"


@pytest.mark.parametrize("label", [label for label in _operations() if label.startswith("POST ")])
def test_errors_the_fuzzer_cannot_provoke_answer_as_documented(caller: Caller, label):
    operation = schemathesis.openapi.from_dict(_document()).find_operation_by_label(label)
    path = label.split(" ", 1)[1]
    too_large = b'{"pad": "' + b"x" * django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE + b'"}'

    for body, content_type, status in ((too_large, "application/json", 413), (b"hello", "text/plain", 415)):
        answer = caller.client.post(path, body, content_type=content_type, **caller.headers())
        assert answer.status_code == status, label
        case = operation.Case(body={}, media_type="application/json")
        case.validate_response(_wrap(answer, path), checks=CHECKS)
