"""README "Govern an existing API", *Try it on Stripe's own document*, as its reader types it:
the README's own import command (operations, --publish, --grant) and its invoke, run in process
against the loopback upstream `python -m conformance.upstream` would be, which must print the
lines the README quotes. On a Stripe-shaped document of our own, and on Stripe's when
../shared/realworld is beside the clone (as `make conformance` finds it)."""

from __future__ import annotations

import io
import json
import re
import shlex
from pathlib import Path

import httpx
import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from apps.tenancy.services import agent_key_issue
from conformance.documents import load_document, server_path
from conformance.run import DEFAULT_DOCS
from conformance.upstream import DEFAULT_PORT, request_line, validating_upstream
from conformance.validation import DocumentValidator, RawRequest
from tests.factories import AgentFactory, TenantFactory

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
WALK = README[README.index("### Try it on Stripe's own document"):README.index("### The steps, in your own")]
STRIPE = DEFAULT_DOCS / "stripe-spec3.yaml"


def _command(program: str) -> list[str]:
    """The arguments of the walk's command running `program`, its line continuations joined."""
    block = re.search(rf"^\.venv/bin/python {re.escape(program)} (.*?)\n```", WALK, re.S | re.M)[1]
    return shlex.split(block.replace("\\\n", " "))


@pytest.mark.parametrize("document", [
    Path(__file__).with_name("customers_api.json"),
    pytest.param(STRIPE, marks=pytest.mark.skipif(not STRIPE.is_file(), reason=f"no {STRIPE}")),
], ids=["own-fixture", "stripe"])
def test_the_readmes_stripe_walk_sends_what_it_quotes(document):
    tenant = TenantFactory(slug="demo")
    agent = AgentFactory(tenant=tenant, name="support-bot")
    spec, *options = _command("manage.py import_openapi")
    assert spec == "$SPEC" and options[options.index("--base-url") + 1] == f"http://127.0.0.1:{DEFAULT_PORT}"
    assert _command("-m conformance.upstream") == ["$SPEC", "--port", str(DEFAULT_PORT)]
    content = load_document(document)
    printed: list[str] = []

    def prints(request: RawRequest, errors: tuple[str, ...]) -> None:  # as the command prints its lines
        printed.append(request_line(request, errors))

    with validating_upstream(listener=prints) as upstream:
        upstream.validator = DocumentValidator(content, base_path=server_path(content))
        options[options.index("--base-url") + 1] = upstream.url
        report = io.StringIO()
        call_command("import_openapi", str(document), *options, stdout=report, stderr=io.StringIO())

        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=agent).secret}")
        invoked = json.loads(re.search(r"^  -d '(\{\"task_id\".*\})'$", WALK, re.M)[1])
        envelope = client.post("/api/v1/invoke", invoked, format="json").json()
        listed = json.loads(re.search(r"`get_customers` with `(\{.*?\})`", WALK)[1])
        client.post("/api/v1/invoke", {"task_id": "t-stripe", "call": {
            "id": "call_2", "name": "get_customers", "arguments": listed}}, format="json")
        form = re.findall(r" -d '([^'{][^']*)'", WALK)  # the curl straight to the loopback upstream
        httpx.post(f"{upstream.url}/v1/customers", content="&".join(form),
                   headers={"Content-Type": "application/x-www-form-urlencoded"})

    lines = report.getvalue().splitlines()
    assert "  PostCustomers: new → post_customers v1 (published)" in lines
    assert "  GetCustomers: new → get_customers v1 (published)" in lines
    assert {"  granted support-bot → post_customers", "  granted support-bot → get_customers"} <= set(lines)
    quoted = json.loads(re.search(r"```json\n(\{\"status\":\"ok\",\"call_id\":\"call_1\".*)\n```", WALK)[1])
    assert {k: v for k, v in envelope.items() if k != "execution_id"} == \
        {k: v for k, v in quoted.items() if k != "execution_id"}
    # the three lines the README shows the loopback upstream printing, in their order
    sent = re.search(r"```\n(POST /v1/customers email=.*? valid)\n```", WALK)[1]
    listed_line = " ".join(re.search(r"prints `(GET\s+\S+ valid)`", WALK)[1].split())
    refused = re.search(r"```\n(POST /v1/customers .*? invalid: .*)\n```", WALK)[1]
    assert printed[:2] == [sent, listed_line]
    assert printed[2].startswith(refused.partition(" invalid: ")[0] + " invalid: ")
    if document == STRIPE:  # the validator's words are Stripe's document's, not our fixture's
        assert printed[2] == refused
