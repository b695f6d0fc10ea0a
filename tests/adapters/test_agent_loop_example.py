"""docs/examples/agent_loop.py runs end to end: exports, both adapters and MCP, no model needed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from apps.capabilities.models import CapabilityRequest
from apps.tenancy.services import agent_key_issue

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "examples" / "agent_loop.py"


@pytest.mark.django_db(transaction=True)
def test_the_scripted_agent_loop_runs_against_the_demo_tools(live_server, agent, demo_tools, session_for):
    key = agent_key_issue(agent=agent).secret
    command = [sys.executable, str(SCRIPT), "--base-url", live_server.url, "--agent-key", key]

    run = subprocess.run(
        [*command, "--session", session_for("u-1001"), "--show", "5000"],
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert run.returncode == 0, run.stderr
    out = run.stdout
    for section in ("== OpenAI-style loop", "== Anthropic-style loop", "== MCP"):
        assert section in out
    assert "tools (openai, ~" in out and "tools (anthropic, ~" in out
    assert "tools (mcp): get_order, search_orders, request_capability" in out
    assert 'model reads (call_1_1): {"status":"ok","call_id":"call_1_1","tool":"search_orders"' in out
    assert 'model reads (toolu_2_1) (is_error): {"status":"error","call_id":"toolu_2_1"' in out
    assert out.count('"kind":"unknown_tool"') == 3
    assert out.count('"kind":"invalid_args"') == 3
    assert "model reads (export_orders_csv) (isError)" in out
    # OpenAI: the user, four assistant turns, five tool messages; Anthropic: one user message per turn.
    assert "conversation: 10 messages" in out and "conversation: 9 messages" in out
    rows = {row.name: row.count for row in CapabilityRequest.objects.all()}
    # The tool the model made up and the capability it then asked for are one need.
    assert rows == {"export_order_csv": 6}
