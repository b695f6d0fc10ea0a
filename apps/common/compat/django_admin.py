"""Django admin's private "not found" answer: `ModelAdmin._get_obj_does_not_exist_redirect`.

The internal: `ModelAdmin._get_obj_does_not_exist_redirect(request, opts, object_id)`, which
the admin's own change and delete views call for an object that does not exist (or that
the user may not see): a warning message ("… with ID “…” doesn't exist. Perhaps it was
deleted?") and a redirect to the admin index. ToolHub's own admin views (the object buttons
of apps/common/admin.py, the try-it console) answer the same way through `object_not_found`.

Checked against Django 5.2.19 (unchanged since Django 3.2).

If it changes: those views would fail with AttributeError (a 500) instead of the admin's
answer for a missing object, or of another tenant's, which must look the same.
tests/common/compat/test_django_admin.py fails first.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin import ModelAdmin
from django.http import HttpRequest, HttpResponse


def object_not_found(model_admin: ModelAdmin[Any], request: HttpRequest, object_id: str) -> HttpResponse:
    """The admin's own answer for an object of `model_admin` that is not there to see."""
    admin: Any = model_admin  # private, so not in the stubs
    response: HttpResponse = admin._get_obj_does_not_exist_redirect(request, model_admin.opts, object_id)
    return response
