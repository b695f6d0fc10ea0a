"""Issue 20's "Done when", end to end: a document shaped like Stripe's or GitHub's (our own small
ones, tests/imports/documents/) imported, published and granted, then called through REST
invoke; the loopback upstream sees the request exactly as the document serializes it, and
the model reads the upstream's own words when it refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from apps.imports.openapi_services import openapi_import
from apps.tenancy.services import agent_key_issue
from tests.factories import AgentFactory, TenantFactory
from tests.gateway.conftest import invoke
from tests.http_upstream import Answer, Received, http_upstream
from tests.http_upstream import Upstream as LoopbackAPI

pytestmark = pytest.mark.django_db

DOCUMENTS = Path(__file__).parent.parent / "imports" / "documents"


@pytest.fixture
def api() -> Iterator[LoopbackAPI]:
    with http_upstream() as upstream:
        yield upstream


def _agent_calling(api: LoopbackAPI, document: str, operations: list[str]) -> APIClient:
    tenant = TenantFactory(slug="acme")
    agent = AgentFactory(tenant=tenant, name="support-bot")
    report = openapi_import(
        tenant=tenant, document_text=(DOCUMENTS / document).read_text(), upstream="api", base_url=api.url,
        actor="curator", operation_ids=operations, publish=True, grant_agents=["support-bot"],
    )
    assert [r.summary for r in report.results] == ["new"] * len(operations)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=agent).secret}")
    return client


def test_stripes_post_customers_reaches_the_upstream_as_a_form_body_in_bracket_notation(api):
    agent = _agent_calling(api, "stripe-like.yaml", ["PostCustomers"])

    answer = invoke(agent, "post_customers", {
        "email": "jenny@example.com", "name": "Jenny Rosen", "metadata": {"order_id": "ORD-1"},
    })

    assert answer.json()["status"] == "ok", answer.json()
    assert api.last.method == "POST" and api.last.path == "/v1/customers"
    assert api.last.headers["content-type"] == "application/x-www-form-urlencoded"
    assert api.last.body == b"email=jenny%40example.com&name=Jenny%20Rosen&metadata[order_id]=ORD-1"


def test_githubs_issues_update_with_only_a_state_changes_only_the_state(api):
    agent = _agent_calling(api, "github-like.yaml", ["issues/update"])

    answer = invoke(agent, "issues_update", {
        "owner": "octo", "repo": "hello", "issue_number": 7, "state": "closed",
    })

    assert answer.json()["status"] == "ok", answer.json()
    assert (api.last.method, api.last.path) == ("PATCH", "/repos/octo/hello/issues/7")
    assert api.last.body == b'{"state":"closed"}'


def test_a_github_422_reaches_the_model_with_githubs_message_and_the_failing_field(api):
    agent = _agent_calling(api, "github-like.yaml", ["issues/update"])

    def refuse(received: Received) -> Answer:
        return Answer(status=422, body={
            "message": "Validation Failed",
            "errors": [{"resource": "Issue", "field": "title", "code": "missing_field"}],
            "documentation_url": "https://docs.github.com/rest/issues/issues#update-an-issue",
        })

    api.answer = refuse

    envelope = invoke(agent, "issues_update", {
        "owner": "octo", "repo": "hello", "issue_number": 7, "title": "",
    }).json()

    assert (envelope["status"], envelope["kind"], envelope["recoverable"]) == ("error", "invalid_args", True)
    assert '"Validation Failed"' in envelope["message"]
    assert [d["path"] for d in envelope["details"]] == ["/title"]
    assert "missing_field" in envelope["details"][0]["problem"]
