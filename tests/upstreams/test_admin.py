"""The admin of upstreams and credentials: write-only values, tenant scoping, platform rows
read-only to tenant staff, and the egress policy's verdict on each upstream."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.upstreams.models import Credential, Upstream
from apps.upstreams.selectors import upstream_for_call
from tests.factories import CredentialFactory, UpstreamFactory

pytestmark = pytest.mark.django_db

SECRET = "adm-secret-91b2c3d4e5f6"


def _change(model: str, obj) -> str:
    return reverse(f"admin:upstreams_{model}_change", args=[obj.pk])


def test_adding_a_credential_stores_it_and_the_page_shows_only_its_last_four(acme, acme_staff):
    added = acme_staff.post(reverse("admin:upstreams_credential_add"), {
        "name": "orders-key", "kind": "bearer", "field": "", "value": SECRET,
        "subjects-TOTAL_FORMS": 0, "subjects-INITIAL_FORMS": 0,
    })
    credential = Credential.objects.get()
    page = acme_staff.get(_change("credential", credential))

    assert added.status_code == 302
    assert (credential.tenant, credential.changed_by, credential.last4) == (acme, "admin:acme-staff", "e5f6")
    html = page.content.decode()
    assert SECRET not in html and credential.ciphertext not in html
    assert "…e5f6" in html and "admin:acme-staff" in html
    assert 'type="password" name="value"' in html and 'value="' + SECRET not in html


def test_saving_with_the_value_empty_keeps_it_and_a_new_value_replaces_it(
    acme, acme_staff, django_capture_on_commit_callbacks
):
    credential = CredentialFactory(tenant=acme, name="orders-key", value=SECRET)
    url = _change("credential", credential)
    form = {"kind": "header", "field": "X-Api-Key", "value": "",
            "subjects-TOTAL_FORMS": 0, "subjects-INITIAL_FORMS": 0}

    with django_capture_on_commit_callbacks(execute=True):
        kept = acme_staff.post(url, form)
    upstream = UpstreamFactory(tenant=acme, name="orders-api", credential=Credential.objects.get())
    headers_kept = upstream_for_call(tenant_id=acme.pk, name=upstream.name, subject="").auth_headers
    with django_capture_on_commit_callbacks(execute=True):
        replaced = acme_staff.post(url, {**form, "value": "new-secret-0000aaaa"})
    headers_new = upstream_for_call(tenant_id=acme.pk, name=upstream.name, subject="").auth_headers

    assert kept.status_code == replaced.status_code == 302
    assert headers_kept == {"X-Api-Key": SECRET}
    assert headers_new == {"X-Api-Key": "new-secret-0000aaaa"}
    events = AuditEvent.objects.filter(action="credential.update").order_by("at")
    assert [e.data["value_changed"] for e in events] == [False, True]


def test_a_refused_value_is_not_echoed_in_the_form(acme, acme_staff):
    bad = "no colon " + SECRET
    response = acme_staff.post(reverse("admin:upstreams_credential_add"), {
        "name": "orders-key", "kind": "basic", "field": "", "value": bad,
        "subjects-TOTAL_FORMS": 0, "subjects-INITIAL_FORMS": 0,
    })

    assert response.status_code == 200 and "Basic auth takes user:password." in response.content.decode()
    assert SECRET not in response.content.decode()
    assert not Credential.objects.exists()


def test_tenant_staff_never_reach_another_tenants_upstreams_or_credentials(acme, globex, acme_staff):
    own = UpstreamFactory(keyed=True, tenant=acme, name="acme-api", credential__name="acme-key")
    foreign_key = CredentialFactory(tenant=globex, name="globex-key")
    foreign = UpstreamFactory(tenant=globex, name="globex-api", credential=foreign_key)

    upstreams = acme_staff.get(reverse("admin:upstreams_upstream_changelist")).content.decode()
    credentials = acme_staff.get(reverse("admin:upstreams_credential_changelist")).content.decode()
    add_page = acme_staff.get(reverse("admin:upstreams_upstream_add")).content.decode()

    assert own.name in upstreams and "globex" not in upstreams
    assert "acme-key" in credentials and "globex" not in credentials
    assert "acme-key" in add_page and "globex-key" not in add_page
    for url in (_change("upstream", foreign), _change("credential", foreign_key),
                reverse("admin:upstreams_credential_delete", args=[foreign_key.pk])):
        assert acme_staff.get(url).status_code == 302  # "not found": back to the admin index
        assert acme_staff.post(url, {"post": "yes", "value": "x"}).status_code in (302, 404)
    assert Credential.objects.get(pk=foreign_key.pk).ciphertext == foreign_key.ciphertext
    assert Upstream.objects.filter(tenant=globex).count() == 1


def test_tenant_staff_cannot_give_their_upstream_another_owners_credential(acme, globex, acme_staff):
    platform_key = CredentialFactory(tenant=None, name="platform-key")
    response = acme_staff.post(reverse("admin:upstreams_upstream_add"), {
        "name": "acme-api", "kind": "http", "base_url": "https://api.acme.example", "timeout_s": 10,
        "credential": platform_key.pk,
    })

    assert response.status_code == 200 and "credential" in response.context["adminform"].form.errors
    assert not Upstream.objects.exists()


def test_platform_upstreams_are_visible_read_only_to_tenant_staff(acme, acme_staff, superuser):
    created = superuser.post(reverse("admin:upstreams_upstream_add"), {
        "name": "payments", "kind": "http", "base_url": "https://pay.example.com", "timeout_s": 5,
        "sync_interval_minutes": 15,
    })
    platform = Upstream.objects.get()

    listed = acme_staff.get(reverse("admin:upstreams_upstream_changelist")).content.decode()
    page = acme_staff.get(_change("upstream", platform))
    edit = acme_staff.post(_change("upstream", platform), {
        "name": "payments", "kind": "http", "base_url": "https://evil.example", "timeout_s": 5,
    })

    assert created.status_code == 302 and platform.tenant is None
    assert "payments" in listed and "platform" in listed
    assert page.status_code == 200 and 'name="base_url"' not in page.content.decode()
    assert edit.status_code == 403
    assert Upstream.objects.get().base_url == "https://pay.example.com"


def test_the_upstream_page_shows_the_egress_policys_verdict(acme, acme_staff, settings):
    settings.TOOLHUB_EGRESS_ALLOW = []
    public = UpstreamFactory(tenant=acme, name="public-api")
    private = UpstreamFactory(tenant=acme, name="metadata", base_url="http://169.254.169.254/latest")

    listed = acme_staff.get(reverse("admin:upstreams_upstream_changelist")).content.decode()
    page = acme_staff.get(_change("upstream", private)).content.decode()

    assert "allowed" in listed and public.name in listed
    assert "refused: 169.254.169.254:80 is a cloud metadata address" in page


def test_only_an_mcp_server_names_a_status_tool(acme, acme_staff):
    response = acme_staff.post(reverse("admin:upstreams_upstream_add"), {
        "name": "acme-api", "kind": "http", "base_url": "https://api.acme.example", "timeout_s": 10,
        "sync_interval_minutes": 15, "status_tool": "pickup_status",
    })

    assert response.status_code == 200
    assert "status_path" in str(response.context["adminform"].form.errors["status_tool"])
    assert not Upstream.objects.exists()
