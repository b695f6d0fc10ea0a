"""The admin's middleware, kept off the agent API's paths.

The agent API (`/api/v1/…`, `/mcp`) authenticates every request with an agent key, sets no
cookie and answers JSON: Django's sessions, signed-in user and messages have nothing to do
there, and their middleware cost a request about 30 µs of CPU (docs/performance.md). These
are Django's middleware, which let a request of the agent API past untouched; every other
path (the admin, its login, the API's docs) gets them in full. CSRF protection stays Django's
own middleware, on every path (the agent API's views are exempt from it: csrf_exempt).
"""

from __future__ import annotations

from collections.abc import Awaitable

from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.http import HttpRequest, HttpResponseBase
from django.utils.deprecation import MiddlewareMixin

AGENT_API_PREFIX = "/api/v1/"
MCP_PATH = "/mcp"


def serves_agents(path: str) -> bool:
    """Whether `path` (a request's path_info) is the agent API's."""
    return path.startswith(AGENT_API_PREFIX) or path == MCP_PATH


class _NotForAgents(MiddlewareMixin):
    """Lets a request of the agent API past the middleware it is mixed into."""

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if serves_agents(request.path_info):
            return self.get_response(request)
        return super().__call__(request)


class SessionMiddleware(_NotForAgents, DjangoSessionMiddleware):
    pass


class AuthenticationMiddleware(_NotForAgents, DjangoAuthenticationMiddleware):
    pass


class MessageMiddleware(_NotForAgents, DjangoMessageMiddleware):
    pass
