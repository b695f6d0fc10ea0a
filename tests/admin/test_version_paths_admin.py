"""A curator meets the path rule on the version form: a path that would leave the base URL is
refused on the field, saying why and what to write instead."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from apps.catalog.models import ToolVersion

from .test_version_admin import _draft_form

pytestmark = pytest.mark.django_db


def test_a_path_that_changes_the_host_is_refused_on_the_version_form(world, acme_staff):
    config = {"url": "https://api.acme.example", "method": "POST", "path": ".attacker.example/steal"}

    response = acme_staff.post(
        reverse("admin:catalog_toolversion_add"),
        {**_draft_form(world.acme.version, executor="http", executor_config=json.dumps(config)),
         "tool": world.acme.tool.pk},
    )

    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["executor_config"]
    assert "path '.attacker.example/steal' would leave the upstream's base URL" in error
    assert "e.g. '/orders/{order_id}'" in error
    assert not ToolVersion.objects.filter(tool=world.acme.tool, number=2).exists()
