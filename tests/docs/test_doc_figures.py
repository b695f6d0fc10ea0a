"""Figures the docs quote are the ones ToolHub computes: token estimates are checked
against what `GET /api/v1/tools` answers for the seeded demo, never typed by hand."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

DOCS = Path(__file__).resolve().parents[2] / "docs"
# docs/agents.md, section 2: the answer for the demo agent with these parameters.
QUOTED_EXPORT = {"format": "openai", "toolset": "support", "phase": "lookup"}
QUOTED = re.compile(r'"token_estimate": (\d+),\s*"tool_token_estimates": (\{[^}]*\})')


def _demo_agent_client() -> APIClient:
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    key = next(line.split("=", 1)[1] for line in out.getvalue().splitlines() if line.startswith("AGENT_KEY="))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def test_the_token_estimates_quoted_in_agents_md_are_what_the_api_answers_for_the_demo():
    quoted = QUOTED.search((DOCS / "agents.md").read_text())

    answer = _demo_agent_client().get("/api/v1/tools", QUOTED_EXPORT).json()

    assert quoted, "docs/agents.md no longer quotes a token estimate: drop this test or its pattern"
    actual = {key: answer[key] for key in ("token_estimate", "tool_token_estimates")}
    assert {"token_estimate": int(quoted[1]), "tool_token_estimates": json.loads(quoted[2])} == actual, (
        f"docs/agents.md section 2 must quote what the API answers for {QUOTED_EXPORT}: {json.dumps(actual)}"
    )
