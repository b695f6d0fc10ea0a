"""Production settings: `check --deploy` clean, nothing defaults that must not, HTTPS-only
cookies, HSTS, SSL redirect (probes exempt), CSRF on the admin."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from tests.ops.conftest import ROOT

MODULE = "toolhub.settings.production"
STRONG_KEY = "k3y-" + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
# What production.py refuses to start without.
REQUIRED_ENV = {
    "SECRET_KEY": STRONG_KEY,
    "ALLOWED_HOSTS": "toolhub.example.com",
    "DATABASE_URL": "postgres://toolhub@db.internal:5432/toolhub",
    "CACHE_URL": "redis://redis.internal:6379/1",
    "CELERY_BROKER_URL": "redis://redis.internal:6379/0",
    "TOOLHUB_METRICS_TOKEN": "scrape-token",
    "TOOLHUB_ENCRYPTION_KEYS": "9gzdb3n0O9cbQw7xvkxKJZ2LeQXn7y6H0X2y5m2yG0c=",
}
SECURITY_SETTINGS = [
    "DEBUG",
    "SECURE_SSL_REDIRECT",
    "SECURE_REDIRECT_EXEMPT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SECURE_PROXY_SSL_HEADER",
    "SESSION_COOKIE_SECURE",
    "SESSION_COOKIE_HTTPONLY",
    "CSRF_COOKIE_SECURE",
    "CSRF_COOKIE_HTTPONLY",
    "X_FRAME_OPTIONS",
    "TOOLHUB_METRICS_TOKEN",
]


@pytest.fixture
def load_production(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., ModuleType]]:
    """Import production.py afresh under the given environment (None removes a variable)."""

    def load(**changes: str | None) -> ModuleType:
        for name, value in {**REQUIRED_ENV, **changes}.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        sys.modules.pop(MODULE, None)
        return importlib.import_module(MODULE)

    yield load
    sys.modules.pop(MODULE, None)


@pytest.fixture
def production_security(load_production, settings) -> ModuleType:
    """This process's settings with production's security settings, behind an https proxy."""
    production = load_production(TOOLHUB_PROXY_SSL_HEADER="X-Forwarded-Proto")
    for name in SECURITY_SETTINGS:
        setattr(settings, name, getattr(production, name))
    return production


def test_manage_check_deploy_is_clean_with_production_settings():
    env = {**os.environ, **REQUIRED_ENV, "DJANGO_SETTINGS_MODULE": MODULE}

    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize("missing", sorted(REQUIRED_ENV))
def test_production_refuses_to_start_without_what_it_needs(load_production, missing):
    with pytest.raises(ImproperlyConfigured, match=f"Set the {missing} environment variable"):
        load_production(**{missing: None})


@pytest.mark.parametrize("weak", ["short", "insecure-dev-key-change-me-" + "x" * 40, "a" * 60])
def test_production_refuses_a_weak_secret_key(load_production, weak):
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY is too weak"):
        load_production(SECRET_KEY=weak)


def test_production_refuses_an_encryption_key_that_is_no_fernet_key(load_production):
    with pytest.raises(ImproperlyConfigured, match="TOOLHUB_ENCRYPTION_KEYS: key 2 is not a Fernet key"):
        load_production(TOOLHUB_ENCRYPTION_KEYS=REQUIRED_ENV["TOOLHUB_ENCRYPTION_KEYS"] + ",not-a-key")


def test_production_defaults_are_the_safe_ones(load_production):
    production = load_production(TOOLHUB_DEMO_ENABLED=None, DEBUG="true")

    assert production.DEBUG is False
    assert production.ALLOWED_HOSTS == ["toolhub.example.com"]
    assert (
        production.SESSION_COOKIE_SECURE and production.CSRF_COOKIE_SECURE and production.SECURE_SSL_REDIRECT
    )
    assert production.SECURE_HSTS_SECONDS >= 31_536_000
    assert "django.middleware.csrf.CsrfViewMiddleware" in production.MIDDLEWARE
    assert production.TOOLHUB_DEMO_ENABLED is False  # no fake payments provider in production
    assert production.DATABASES["default"]["OPTIONS"]["connect_timeout"] == 5


def test_the_demo_in_production_needs_its_own_upstream_key(load_production):
    with pytest.raises(ImproperlyConfigured, match="DEMO_PAYMENTS_API_KEY"):
        load_production(TOOLHUB_DEMO_ENABLED="true", DEMO_PAYMENTS_API_KEY=None)


def test_plain_http_is_redirected_to_https_except_the_probes(production_security, client, db):
    admin = client.get("/admin/login/")
    health = client.get("/healthz")

    assert admin.status_code == 301 and admin["Location"] == "https://testserver/admin/login/"
    assert health.status_code == 200


def test_https_answers_carry_hsts_and_secure_http_only_cookies(production_security, client, db):
    response = client.get("/admin/login/", HTTP_X_FORWARDED_PROTO="https")

    csrf_cookie = response.cookies["csrftoken"]
    assert response.status_code == 200
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert response["X-Frame-Options"] == "DENY" and response["X-Content-Type-Options"] == "nosniff"
    assert csrf_cookie["secure"] and csrf_cookie["httponly"]


def test_the_admin_login_is_refused_without_its_csrf_token_and_works_with_it(
    production_security, db, django_user_model, settings
):
    settings.ALLOWED_HOSTS = production_security.ALLOWED_HOSTS
    django_user_model.objects.create_superuser("ops", "ops@example.com", "a-long-password-1")
    # A browser on the admin's login page, through the TLS proxy: over HTTPS it sends the
    # page as Referer, which must match the Host.
    browser = Client(
        enforce_csrf_checks=True,
        HTTP_HOST="toolhub.example.com",
        HTTP_X_FORWARDED_PROTO="https",
        HTTP_REFERER="https://toolhub.example.com/admin/login/",
    )
    credentials = {"username": "ops", "password": "a-long-password-1", "next": "/admin/"}

    forged = browser.post("/admin/login/", credentials)
    token = browser.get("/admin/login/").cookies["csrftoken"].value
    login = browser.post("/admin/login/", {**credentials, "csrfmiddlewaretoken": token})

    assert forged.status_code == 403 and "sessionid" not in forged.cookies
    assert login.status_code == 302 and login["Location"] == "/admin/"
    assert login.cookies["sessionid"]["secure"] and login.cookies["sessionid"]["httponly"]


def test_the_agent_api_needs_no_csrf_token_it_authenticates_with_a_bearer_key(production_security, api):
    api.handler.enforce_csrf_checks = True

    response = api.post(
        "/api/v1/invoke",
        {"task_id": "t", "call": {"id": "c", "name": "nope", "arguments": {}}},
        format="json",
        HTTP_X_FORWARDED_PROTO="https",
    )

    assert response.status_code == 200 and response.json()["kind"] == "unknown_tool"


def test_metrics_in_production_need_the_token(production_security, client, db):
    https = {"HTTP_X_FORWARDED_PROTO": "https"}

    refused = client.get("/metrics", **https)
    served = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token", **https)

    assert refused.status_code == 401 and served.status_code == 200
