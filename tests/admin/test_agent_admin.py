"""Keys in the admin: issued with a button and shown once, revoked with a button or action."""

from __future__ import annotations

import re

import pytest
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpResponse
from django.test import Client
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.tenancy.models import AgentKey
from tests.tenancy.conftest import bearer, rows_containing

pytestmark = pytest.mark.django_db

KEY = re.compile(r"thk_[0-9a-f]{10}_[A-Za-z0-9_-]+")


def _issue(client, agent, label: str = ""):
    return client.post(reverse("admin:tenancy_agent_button", args=[agent.pk, "issue-key"]),
                       {"label": label}, follow=True)


def test_issuing_a_key_shows_it_once_and_stores_only_its_hash(world, acme_staff):
    agent = world.acme.agent

    response = _issue(acme_staff, agent, label="from admin")

    (secret,) = KEY.findall(response.content.decode())
    key = AgentKey.objects.get(agent=agent, label="from admin")
    assert secret.startswith(f"thk_{key.prefix}_")
    assert "shown only this once" in response.content.decode()
    assert rows_containing(secret) == {}
    assert bearer(secret).post("/api/v1/sessions", {"subject": "u-1"}, format="json").status_code == 201
    # and it is not shown again
    again = acme_staff.get(reverse("admin:tenancy_agent_change", args=[agent.pk]))
    assert not KEY.findall(again.content.decode())
    assert AuditEvent.objects.filter(action="agent_key.issue", actor="admin:acme-staff").count() == 1


def _browse(client: Client, url: str, data: dict | None = None) -> list[HttpResponse]:
    """One request (a POST when there is data) and every redirect after it, as a browser goes."""
    responses = [client.post(url, data) if data is not None else client.get(url)]
    while responses[-1].status_code in (301, 302, 303):
        responses.append(client.get(responses[-1]["Location"]))
    return responses


def _cookie_texts(response: HttpResponse) -> list[str]:
    """Every Set-Cookie of a response as sent, and the messages cookie also as Django reads it
    (signed, not encrypted; compressed when that is shorter)."""
    texts = []
    for morsel in response.cookies.values():
        texts.append(morsel.OutputString())
        if morsel.key == CookieStorage.cookie_name and morsel.value:
            texts.append(repr(CookieStorage(None)._decode(morsel.value)))
    return texts


@pytest.mark.parametrize("how", ["button", "action"])
def test_a_new_key_travels_in_no_cookie_and_no_session(world, acme_staff, how):
    agent = world.acme.agent
    change = reverse("admin:tenancy_agent_change", args=[agent.pk])
    if how == "button":
        issuing = (reverse("admin:tenancy_agent_button", args=[agent.pk, "issue-key"]), {"label": "ci"})
    else:
        issuing = (reverse("admin:tenancy_agent_changelist"),
                   {"action": "issue_key", "_selected_action": [agent.pk]})

    flow = [*_browse(acme_staff, change), *_browse(acme_staff, *issuing), *_browse(acme_staff, change)]

    shown = [secret for response in flow for secret in KEY.findall(response.content.decode())]
    (secret,) = shown
    assert AgentKey.objects.filter(agent=agent).count() == 2
    cookies = [text for response in flow for text in _cookie_texts(response)]
    assert not [text for text in cookies if secret in text]
    assert secret not in repr(dict(acme_staff.session.items()))


def test_the_issue_key_action_issues_one_key_per_agent(world, superuser):
    response = superuser.post(reverse("admin:tenancy_agent_changelist"), {
        "action": "issue_key", "_selected_action": [world.acme.agent.pk, world.globex.agent.pk],
    }, follow=True)

    assert len(KEY.findall(response.content.decode())) == 2
    assert AgentKey.objects.count() == 4


def test_a_key_cannot_be_issued_for_another_tenants_agent(world, acme_staff):
    response = _issue(acme_staff, world.globex.agent)

    assert "doesn’t exist" in response.content.decode()
    assert AgentKey.objects.filter(agent=world.globex.agent).count() == 1


def test_the_agent_page_lists_its_keys_read_only(world, acme_staff):
    response = acme_staff.get(reverse("admin:tenancy_agent_change", args=[world.acme.agent.pk]))

    page = response.content.decode()
    assert world.acme.key.prefix in page and "acme-key" in page
    assert 'name="keys-0-label"' not in page
    assert [b.name for b in response.context["toolhub_buttons"]] == ["issue-key"]


def test_revoking_a_key_by_button(world, acme_staff, django_capture_on_commit_callbacks):
    key = world.acme.key

    with django_capture_on_commit_callbacks(execute=True):
        response = acme_staff.post(reverse("admin:tenancy_agentkey_button", args=[key.pk, "revoke"]),
                                   {"note": "left the company"}, follow=True)

    key.refresh_from_db()
    assert key.revoked_at is not None
    assert f"Key {key.prefix} of acme/acme-bot is revoked." in response.content.decode()
    assert response.context["toolhub_buttons"] == []
    assert AuditEvent.objects.get(action="agent_key.revoke").note == "left the company"


def test_revoking_keys_from_the_list_reaches_only_the_tenants_keys(world, acme_staff):
    response = acme_staff.post(reverse("admin:tenancy_agentkey_changelist"), {
        "action": "revoke", "_selected_action": [world.acme.key.pk, world.globex.key.pk],
    }, follow=True)

    assert AgentKey.objects.get(pk=world.acme.key.pk).revoked_at is not None
    assert AgentKey.objects.get(pk=world.globex.key.pk).revoked_at is None
    assert f"Revoked 1 key(s): {world.acme.key.prefix}." in response.content.decode()


def test_the_key_page_is_view_only(world, acme_staff):
    page = reverse("admin:tenancy_agentkey_change", args=[world.acme.key.pk])

    response = acme_staff.post(page, {"label": "renamed"})

    assert response.status_code == 403
    assert AgentKey.objects.get(pk=world.acme.key.pk).label == "acme-key"
    assert acme_staff.get(reverse("admin:tenancy_agentkey_add")).status_code == 403


def test_deactivating_an_agent_in_the_admin_is_audited(world, acme_staff):
    agent = world.acme.agent

    response = acme_staff.post(reverse("admin:tenancy_agent_change", args=[agent.pk]), {
        "name": agent.name, "description": "", "keys-TOTAL_FORMS": 1, "keys-INITIAL_FORMS": 1,
        "keys-0-id": world.acme.key.pk, "keys-0-agent": agent.pk,
    })

    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.active is False and agent.tenant == world.acme.tenant
    assert AuditEvent.objects.get(action="agent.update").data == {"name": "acme-bot", "active": False}
