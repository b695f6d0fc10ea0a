"""The admin's middleware (sessions, the signed-in user, messages) let the agent API's
requests past untouched, and apply in full everywhere else (apps/common/admin_middleware.py)."""

from __future__ import annotations

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from apps.audit.models import Invocation
from apps.common.admin_middleware import (
    AuthenticationMiddleware,
    MessageMiddleware,
    SessionMiddleware,
)
from apps.ledger.models import LedgerEntry

COOKIES = "sessionid=a-session-of-the-admins; csrftoken=aToken1234567890aToken1234567890"


def through_the_admins_middleware(path: str) -> HttpRequest:
    request = RequestFactory().get(path, HTTP_COOKIE=COOKIES)
    chain = SessionMiddleware(AuthenticationMiddleware(MessageMiddleware(lambda request: HttpResponse("ok"))))
    assert chain(request).status_code == 200
    return request


@pytest.mark.parametrize("path", ["/api/v1/invoke", "/api/v1/tools", "/mcp"])
def test_a_request_of_the_agent_api_passes_untouched(path):
    request = through_the_admins_middleware(path)

    assert not any(hasattr(request, name) for name in ("session", "user", "_messages"))


@pytest.mark.parametrize("path", ["/admin/", "/admin/login/", "/api/docs/", "/api/v1", "/mcp/tools"])
def test_every_other_path_gets_sessions_the_user_and_messages(path, db):
    request = through_the_admins_middleware(path)

    assert request.session.session_key == "a-session-of-the-admins"
    assert request.user.is_anonymous  # no such session: nobody signed in
    assert request._messages is not None


def test_an_admins_session_cookie_is_no_credential_of_the_agent_api(admin_client):
    answer = admin_client.post("/api/v1/invoke", {"task_id": "t-1", "call": {"id": "c1", "name": "x"}},
                               content_type="application/json")

    assert answer.status_code == 401
    assert "Bearer" in answer.json()["hint"]
    assert not Invocation.objects.exists() and not LedgerEntry.objects.exists()
