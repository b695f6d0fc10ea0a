"""Canary: the admin's private "not found" answer still has the shape ToolHub's own admin
views use (apps/common/compat/django_admin.py)."""

from __future__ import annotations

import inspect

from django.contrib import admin, messages
from django.contrib.admin import ModelAdmin
from django.contrib.auth.models import User
from django.contrib.messages.storage.fallback import FallbackStorage
from django.test import RequestFactory
from django.urls import reverse

from apps.common.compat.django_admin import object_not_found


def test_the_private_helper_keeps_its_signature():
    helper = getattr(ModelAdmin, "_get_obj_does_not_exist_redirect", None)

    assert helper is not None, "ModelAdmin._get_obj_does_not_exist_redirect is gone"
    assert list(inspect.signature(helper).parameters) == ["self", "request", "opts", "object_id"]


def test_a_missing_object_is_answered_with_a_warning_and_the_admin_index():
    request = RequestFactory().get("/admin/auth/user/404/")
    request.session = {}
    request._messages = FallbackStorage(request)

    response = object_not_found(admin.site.get_model_admin(User), request, "404")

    assert (response.status_code, response["Location"]) == (302, reverse("admin:index"))
    [message] = list(messages.get_messages(request))
    assert message.level == messages.WARNING and "404" in message.message
