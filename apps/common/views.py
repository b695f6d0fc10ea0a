"""The 404 of URLs nothing matches."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.templatetags.static import static
from django.views.defaults import page_not_found

from .errors import NotFoundError


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask /favicon.ico of every page that names none (the API docs, JSON answers)."""
    return HttpResponsePermanentRedirect(static("toolhub/favicon.ico"))


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """An error envelope under /api/, where every non-2xx answer is one (a mistyped path, an id
    that is not a UUID); Django's page elsewhere."""
    if not request.path.startswith("/api/"):
        return page_not_found(request, exception)
    error = NotFoundError(
        "Nothing of the API is at this URL.",
        hint="Check the path and the ids in it against the API reference at /api/docs/.",
    )
    return JsonResponse(error.as_envelope(), status=404)
