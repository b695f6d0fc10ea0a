"""add_upstream and set_credential: create or update from the command line; a value only
ever from standard input."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from apps.audit.models import AuditEvent
from apps.upstreams.models import Credential, Upstream
from apps.upstreams.selectors import upstream_for_call

pytestmark = pytest.mark.django_db

SECRET = "cli-secret-7c1d3e5f60a9"


def _set(monkeypatch, stdin: str, *args: str) -> str:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    out = io.StringIO()
    call_command("set_credential", *args, stdout=out)
    return out.getvalue()


def test_set_credential_reads_the_value_from_standard_input(acme, monkeypatch):
    out = _set(monkeypatch, SECRET + "\n", "orders-key", "--tenant", "acme", "--kind", "header",
               "--field", "X-Api-Key")
    call_command("add_upstream", "orders-api", "--tenant", "acme", "--kind", "http",
                 "--url", "https://orders.example.com", "--credential", "orders-key", stdout=io.StringIO())

    resolved = upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")
    assert resolved.auth_headers == {"X-Api-Key": SECRET}
    assert out == "Credential orders-key (header): stored encrypted, ends in …60a9.\n"
    credential = Credential.objects.get()
    assert (credential.changed_by, credential.last4) == ("cli:set_credential", "60a9")
    assert AuditEvent.objects.filter(action="credential.create", tenant=acme).count() == 1


def test_set_credential_again_replaces_the_value_and_kind(acme, monkeypatch):
    _set(monkeypatch, SECRET, "orders-key", "--tenant", "acme", "--kind", "bearer")
    _set(monkeypatch, "user:" + SECRET, "orders-key", "--tenant", "acme", "--kind", "basic")
    call_command("add_upstream", "orders-api", "--tenant", "acme", "--url", "https://orders.example.com",
                 "--credential", "orders-key", stdout=io.StringIO())

    assert Credential.objects.get().kind == "basic"
    resolved = upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")
    assert resolved.auth_headers["Authorization"].startswith("Basic ")


def test_the_value_is_never_a_command_line_argument(acme, monkeypatch):
    with pytest.raises(CommandError, match="unrecognized arguments"):
        _set(monkeypatch, "", "orders-key", "--tenant", "acme", "--kind", "bearer", SECRET)


def test_a_per_user_credential_reads_no_value(acme, monkeypatch):
    out = _set(monkeypatch, "ignored", "crm", "--tenant", "acme", "--kind", "bearer", "--per-subject")

    assert "each end user registers their own" in out
    assert Credential.objects.get().ciphertext == ""


def test_set_credential_refuses_what_cannot_work_and_saves_nothing(acme, monkeypatch):
    with pytest.raises(CommandError, match="Nothing was saved: field: A header credential needs"):
        _set(monkeypatch, SECRET, "orders-key", "--tenant", "acme", "--kind", "header")
    with pytest.raises(CommandError, match="No tenant with slug 'nope'"):
        _set(monkeypatch, SECRET, "orders-key", "--tenant", "nope", "--kind", "bearer")
    assert not Credential.objects.exists()


def test_add_upstream_creates_then_updates_keeping_its_credential(acme, monkeypatch):
    _set(monkeypatch, SECRET, "orders-key", "--tenant", "acme", "--kind", "bearer")
    first = io.StringIO()
    call_command("add_upstream", "orders-api", "--tenant", "acme", "--kind", "http",
                 "--url", "https://orders.example.com", "--credential", "orders-key", stdout=first)
    second = io.StringIO()
    call_command("add_upstream", "orders-api", "--tenant", "acme", "--kind", "mcp",
                 "--url", "https://orders.example.com/mcp", "--timeout", "3", stdout=second)

    upstream = Upstream.objects.get()
    assert first.getvalue() == "Created upstream orders-api of acme.\n"
    assert second.getvalue() == "Updated upstream orders-api of acme.\n"
    assert (upstream.kind, upstream.base_url, upstream.timeout_s, upstream.credential.name) == (
        "mcp", "https://orders.example.com/mcp", 3.0, "orders-key"
    )
    assert list(AuditEvent.objects.filter(tenant=acme, action__startswith="upstream.")
                .order_by("at").values_list("action", flat=True)) == ["upstream.create", "upstream.update"]


def test_add_upstream_for_the_platform_and_its_refusals(acme, settings):
    settings.TOOLHUB_EGRESS_ALLOW = []
    err = io.StringIO()
    call_command("add_upstream", "internal", "--platform", "--url", "http://10.0.0.5/api",
                 stdout=io.StringIO(), stderr=err)

    assert Upstream.objects.get().tenant is None
    assert "The egress policy refuses it" in err.getvalue() and "private" in err.getvalue()
    with pytest.raises(CommandError, match="No credential 'missing'"):
        call_command("add_upstream", "orders-api", "--tenant", "acme", "--url", "https://x.example",
                     "--credential", "missing")
    with pytest.raises(CommandError, match="Nothing was saved: base_url"):
        call_command("add_upstream", "orders-api", "--tenant", "acme", "--url", "ftp://x.example/files")
    with pytest.raises(CommandError, match="platform already has an upstream named internal"):
        call_command("add_upstream", "internal", "--tenant", "acme", "--url", "https://x.example")
