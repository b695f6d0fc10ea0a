"""`manage.py issue_agent_key` and `revoke_agent_key`, as an operator uses them."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.tenancy.models import Agent, AgentKey
from tests.factories import TenantFactory

from .conftest import bearer, rows_containing

pytestmark = pytest.mark.django_db


def _run(name: str, *args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _issued_secret(stdout: str) -> str:
    lines = stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("AGENT_KEY=thk_")
    return lines[0].removeprefix("AGENT_KEY=")


def test_issue_prints_the_key_once_on_a_line_of_its_own(agent):
    out, err = _run("issue_agent_key", "--tenant", "acme", "--agent", "support-bot", "--label", "ci")

    secret = _issued_secret(out)
    key = AgentKey.objects.get(agent=agent)
    assert (key.label, key.tenant_id) == ("ci", agent.tenant_id)
    assert key.prefix in err and "shown only this once" in err
    assert secret not in err
    assert rows_containing(secret) == {}
    assert bearer(secret).post("/api/v1/sessions", {"subject": "u-1"}, format="json").status_code == 201


def test_issue_refuses_an_unknown_tenant():
    with pytest.raises(CommandError, match="No tenant with slug 'nope'"):
        _run("issue_agent_key", "--tenant", "nope", "--agent", "bot")
    assert not AgentKey.objects.exists()


def test_issue_refuses_an_unknown_agent_and_suggests_create_agent():
    TenantFactory(slug="acme")

    with pytest.raises(CommandError, match="has no agent 'ghost'.*--create-agent"):
        _run("issue_agent_key", "--tenant", "acme", "--agent", "ghost")
    assert not Agent.objects.exists()
    assert not AgentKey.objects.exists()


def test_issue_can_create_the_agent():
    TenantFactory(slug="acme")

    out, _ = _run("issue_agent_key", "--tenant", "acme", "--agent", "new-bot", "--create-agent")

    _issued_secret(out)
    assert AgentKey.objects.get().agent == Agent.objects.get(tenant__slug="acme", name="new-bot")


def test_issue_warns_when_the_key_cannot_work_yet(agent):
    agent.active = False
    agent.save()

    _, err = _run("issue_agent_key", "--tenant", "acme", "--agent", "support-bot")

    assert "inactive" in err


def test_revoke_by_prefix_refuses_the_key(issued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        out, _ = _run("revoke_agent_key", "--prefix", issued.key.prefix, "--note", "rotated")

    assert f"Revoked key {issued.key.prefix}" in out
    assert AgentKey.objects.get(pk=issued.key.pk).revoked_at is not None
    assert bearer(issued.secret).post("/api/v1/sessions", {"subject": "u"}, format="json").status_code == 401


def test_revoke_accepts_the_full_key_and_is_idempotent(issued):
    _run("revoke_agent_key", "--prefix", issued.secret)
    revoked_at = AgentKey.objects.get(pk=issued.key.pk).revoked_at

    out, _ = _run("revoke_agent_key", "--prefix", issued.key.prefix)

    assert "already revoked" in out
    assert AgentKey.objects.get(pk=issued.key.pk).revoked_at == revoked_at


def test_revoke_refuses_an_unknown_prefix(issued):
    with pytest.raises(CommandError, match="No agent key with prefix 'deadbeef00'"):
        _run("revoke_agent_key", "--prefix", "deadbeef00")
    assert AgentKey.objects.get(pk=issued.key.pk).revoked_at is None
