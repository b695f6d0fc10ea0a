"""The platform's secrets and the egress policy, as curators meet them in the admin: a
tenant's curator cannot name a platform setting, and nothing that could not run is published
(an unknown secret or URL setting, a URL the egress policy refuses)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from apps.catalog.models import ToolVersion, VersionStatus
from tests.factories import ToolVersionFactory
from tests.listeners import recording_listener

from .test_version_admin import _button, _change, _draft_form

pytestmark = pytest.mark.django_db


def _http_draft_form(version: ToolVersion, config: dict) -> dict:
    return _draft_form(version, executor="http", executor_config=json.dumps(config))


@pytest.mark.parametrize(
    "named",
    [{"secret_ref": "DEMO_PAYMENTS_API_KEY"}, {"url_setting": "TOOLHUB_DEMO_PAYMENTS_URL"}],
    ids=["secret_ref", "url_setting"],
)
def test_a_tenants_curator_cannot_name_a_platform_setting_in_a_version(world, acme_staff, named):
    # given: an attacker's listener, and acme's curator writing a version of acme's own tool
    with recording_listener() as listener:
        config = {"url": f"{listener.url}/steal", **named}
        if "url_setting" in named:
            del config["url"]

        # when
        response = acme_staff.post(
            reverse("admin:catalog_toolversion_add"),
            {**_http_draft_form(world.acme.version, config), "tool": world.acme.tool.pk},
        )

    # then: refused on the form, saying the rule and what to do instead
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["executor_config"]
    assert "cannot name platform settings" in errors[0]
    assert "only shared-catalog tools" in errors[0]
    assert not ToolVersion.objects.filter(tool=world.acme.tool, number=2).exists()
    assert listener.connections == 0


def test_a_tenants_draft_cannot_be_edited_to_name_a_platform_secret(world, acme_staff):
    draft = ToolVersionFactory(tool=world.acme.tool, number=2)

    response = acme_staff.post(
        _change(draft),
        _http_draft_form(draft, {"url": "https://api.example.com", "secret_ref": "DEMO_PAYMENTS_API_KEY"}),
    )

    assert response.status_code == 200
    assert "cannot name platform settings" in response.content.decode()
    assert ToolVersion.objects.get(pk=draft.pk).executor == "python"


def test_a_tenants_curator_may_publish_an_http_version_with_its_own_public_url(world, acme_staff):
    draft = ToolVersionFactory(
        tool=world.acme.tool, number=2, executor="http",
        executor_config={"url": "https://api.acme.example", "path": "/lookups"},
    )

    response = acme_staff.post(_button(draft, "publish"), {"note": ""}, follow=True)

    draft.refresh_from_db()
    assert draft.status == VersionStatus.PUBLISHED, response.content.decode()


@pytest.mark.parametrize(
    ("config", "code", "says"),
    [
        ({"url": "https://pay.example", "secret_ref": "NO_SUCH_KEY"}, "unknown-secret-ref",
         "TOOLHUB_SECRETS has no secret named 'NO_SUCH_KEY'"),
        ({"url_setting": "NO_SUCH_URL"}, "unknown-url-setting",
         "No setting named 'NO_SUCH_URL' holds an http(s) URL"),
        ({"url_setting": "SECRET_KEY"}, "unknown-url-setting",
         "No setting named 'SECRET_KEY' holds an http(s) URL"),
    ],
    ids=["unknown-secret", "unknown-url-setting", "setting-that-is-not-a-url"],
)
def test_a_version_naming_what_the_platform_does_not_have_is_not_published(
    world, superuser, config, code, says
):
    # given: a shared tool's draft (the platform's own), saved fine
    draft = ToolVersionFactory(tool=world.shared_tool, number=2, executor="http", executor_config=config)

    # when: its page is shown, then Publish is pressed
    page = superuser.get(_change(draft))
    response = superuser.post(_button(draft, "publish"), {"note": ""}, follow=True)

    # then: lint shows the error and publishing is refused; every call would have answered 500
    finding = next(f for f in page.context["lint_findings"] if f.code == code)
    assert finding.is_error and says in finding.why
    assert "cannot be published" in response.content.decode()
    draft.refresh_from_db()
    assert draft.status == VersionStatus.DRAFT


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254:80 is a cloud metadata address"),
        ("http://metadata.google.internal/computeMetadata/v1", "is a cloud metadata address"),
        ("http://10.1.2.3:8080", "10.1.2.3:8080 is a private address"),
        ("http://127.0.0.1:8000/demo/payments", "127.0.0.1:8000 is a loopback address"),
        ("http://[fd00::1]/x", "fd00::1:80 is a unique-local address"),
    ],
    ids=["metadata-ip", "metadata-name", "private", "loopback", "unique-local"],
)
def test_a_version_whose_url_the_egress_policy_refuses_is_not_published(
    world, superuser, settings, url, says
):
    settings.TOOLHUB_EGRESS_ALLOW = []
    draft = ToolVersionFactory(
        tool=world.shared_tool, number=2, executor="http", executor_config={"url": url}
    )

    response = superuser.post(_button(draft, "publish"), {"note": ""}, follow=True)

    page = response.content.decode()
    assert "cannot be published" in page and "TOOLHUB_EGRESS_ALLOW" in page
    page_findings = superuser.get(_change(draft)).context["lint_findings"]
    refusal = next(f for f in page_findings if f.code == "egress-refused")
    assert says in refusal.why
    draft.refresh_from_db()
    assert draft.status == VersionStatus.DRAFT


def test_a_host_named_in_the_allowlist_is_published(world, superuser, settings):
    settings.TOOLHUB_EGRESS_ALLOW = ["10.1.2.3:8080"]
    draft = ToolVersionFactory(
        tool=world.shared_tool, number=2, executor="http", executor_config={"url": "http://10.1.2.3:8080"}
    )

    superuser.post(_button(draft, "publish"), {"note": ""})

    draft.refresh_from_db()
    assert draft.status == VersionStatus.PUBLISHED


def test_a_shared_tool_naming_a_platform_secret_cannot_be_handed_to_a_tenant(world, superuser):
    # given: a shared tool whose version sends the platform's payments key
    ToolVersionFactory(
        tool=world.shared_tool, number=2, executor="http",
        executor_config={"url": "https://payments.example.com", "secret_ref": "DEMO_PAYMENTS_API_KEY"},
    )
    tool = world.shared_tool

    # when: a superuser gives it an owner in the tool's admin page
    response = superuser.post(
        reverse("admin:catalog_tool_change", args=[tool.pk]),
        {"name": tool.name, "tenant": world.acme.tenant.pk, "summary": tool.summary, "replaced_by": ""},
    )

    # then: refused, saying why; the tool stays shared
    assert response.status_code == 200
    assert "name platform settings (DEMO_PAYMENTS_API_KEY)" in response.content.decode()
    tool.refresh_from_db()
    assert tool.tenant_id is None
