"""A secret set through every path of the upstreams app (command, admin, API, rotation, and
their refusals) appears in no answer, no log record, no audit row and no table: only its
ciphertext is stored."""

from __future__ import annotations

import io
import logging
import uuid

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from apps.tenancy.models import Agent
from apps.tenancy.services import session_mint
from apps.upstreams.models import Credential
from apps.upstreams.selectors import upstream_for_call
from tests.factories import UpstreamFactory

pytestmark = pytest.mark.django_db


def _every_table_as_text() -> str:
    """Every row of every table of the database, as PostgreSQL prints it."""
    texts = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT t::text FROM "{table}" t')
            texts.extend(row[0] for row in cursor.fetchall())
    return "\n".join(texts)


def test_a_secret_through_every_path_is_stored_only_encrypted(
    acme, acme_staff, acme_api, monkeypatch, settings, fernet_keys, caplog
):
    caplog.set_level(logging.DEBUG)
    mark = f"leak-{uuid.uuid4().hex}"
    settings.TOOLHUB_ENCRYPTION_KEYS = [fernet_keys[0]]
    responses = []
    outputs = []

    # Command: a header key from standard input, and a per-user credential.
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{mark}-cli-0001\n"))
    out = io.StringIO()
    call_command("set_credential", "cli-key", "--tenant", "acme", "--kind", "header", "--field", "X-Key",
                 stdout=out, stderr=out)
    call_command("set_credential", "crm", "--tenant", "acme", "--kind", "bearer", "--per-subject",
                 stdout=out, stderr=out)
    call_command("add_upstream", "cli-api", "--tenant", "acme", "--url", "https://cli.example",
                 "--credential", "cli-key", stdout=out, stderr=out)
    UpstreamFactory(tenant=acme, name="crm-api", base_url="https://crm.example",
                    credential=Credential.objects.get(name="crm"))
    # Admin: add, change, a refused value, then every page about it.
    inline = {"subjects-TOTAL_FORMS": 0, "subjects-INITIAL_FORMS": 0}
    responses.append(acme_staff.post(reverse("admin:upstreams_credential_add"), {
        "name": "admin-key", "kind": "bearer", "value": f"{mark}-admin-0002", **inline}))
    admin_key = Credential.objects.get(name="admin-key")
    change = reverse("admin:upstreams_credential_change", args=[admin_key.pk])
    responses.append(acme_staff.post(change, {"kind": "query", "field": "key", "value": f"{mark}-admin-0003",
                                              **inline}))
    responses.append(acme_staff.post(change, {"kind": "basic", "value": f"{mark}-no-colon", **inline}))
    responses.append(acme_staff.post(change, {"kind": "bearer", "value": f"{mark}\x00-nul", **inline}))
    # API: a user's token, a refused one, and one for a credential that is not per user.
    url = "/api/v1/credentials/{}/subjects/u-1"
    bot = Agent.objects.get(tenant=acme, name="acme-bot")
    session = {"HTTP_X_TOOLHUB_SESSION": session_mint(tenant_id=acme.pk, agent_id=bot.pk, subject="u-1",
                                                      attributes={}, ttl_s=900)[0]}
    for name, value in (("crm", f"{mark}-api-0004"), ("crm", f"{mark}\n-api"),
                        ("cli-key", f"{mark}-api-0005"), ("nope", f"{mark}-api-0006")):
        responses.append(acme_api.put(url.format(name), {"value": value}, format="json", **session))
    # Rotation to a new key, then what an executor gets.
    settings.TOOLHUB_ENCRYPTION_KEYS = [fernet_keys[1], fernet_keys[0]]
    call_command("rotate_credentials", stdout=out, stderr=out)
    resolved = [
        upstream_for_call(tenant_id=acme.pk, name=name, subject="u-1", agent_id=bot.pk)
        for name in ("cli-api", "crm-api")
    ]
    for page in ("admin:upstreams_credential_changelist", "admin:upstreams_upstream_changelist",
                 "admin:audit_auditevent_changelist"):
        responses.append(acme_staff.get(reverse(page)))
    for credential in Credential.objects.all():
        for page in ("change", "history", "delete"):
            page_url = reverse(f"admin:upstreams_credential_{page}", args=[credential.pk])
            responses.append(acme_staff.get(page_url))

    # The values did arrive where they belong...
    assert resolved[0].auth_headers == {"X-Key": f"{mark}-cli-0001"}
    assert resolved[1].auth_headers == {"Authorization": f"Bearer {mark}-api-0004"}
    assert all(r.status_code < 500 for r in responses)
    # ...and nowhere else.
    outputs.append(out.getvalue())
    outputs.extend(r.content.decode(errors="replace") for r in responses)
    outputs.extend(repr(r) for r in resolved)
    outputs.append(caplog.text)
    outputs.extend(str(record.__dict__) for record in caplog.records)
    outputs.append(_every_table_as_text())
    for text in outputs:
        assert mark not in text, text[max(0, text.find(mark) - 300): text.find(mark) + 100]
