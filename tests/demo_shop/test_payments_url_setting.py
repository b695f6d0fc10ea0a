"""Where refund_payment reaches the demo payments upstream: the server's own port."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings

CODE = "from django.conf import settings; print(settings.TOOLHUB_DEMO_PAYMENTS_URL)"


def _payments_url(**env: str) -> str:
    unset = ("TOOLHUB_PORT", "TOOLHUB_DEMO_PAYMENTS_URL")
    environment = {k: v for k, v in os.environ.items() if k not in unset}
    environment.update(DJANGO_SETTINGS_MODULE="toolhub.settings.base", **env)
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {CODE}"],
        cwd=settings.BASE_DIR, env=environment, capture_output=True, text=True, timeout=60, check=True,
    )
    return result.stdout.strip()


@pytest.mark.parametrize(
    ("env", "url"),
    [
        ({}, "http://127.0.0.1:8000/demo/payments"),
        ({"TOOLHUB_PORT": "8123"}, "http://127.0.0.1:8123/demo/payments"),
        (
            {"TOOLHUB_PORT": "8123", "TOOLHUB_DEMO_PAYMENTS_URL": "https://pay.example/demo"},
            "https://pay.example/demo",
        ),
    ],
    ids=["default-port", "moved-server", "set-explicitly"],
)
def test_the_demo_payments_url_follows_the_servers_port(env, url):
    assert _payments_url(**env) == url
