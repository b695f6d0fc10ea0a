"""docker-compose.yml, the Dockerfile and gunicorn.conf.py, checked without Docker (this
machine has none): the shape is right, the commands are the README's, nothing is missing."""

from __future__ import annotations

import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest
import yaml
from django.utils.module_loading import import_string
from gunicorn.workers.gthread import ThreadWorker

from apps.catalog.models import ToolVersion
from tests.ops.conftest import ROOT
from tests.ops.test_production_settings import REQUIRED_ENV

APP_SERVICES = ("migrate", "web", "worker", "beat")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_compose_runs_web_worker_beat_postgresql_and_redis(compose):
    services = compose["services"]

    assert {"web", "worker", "beat", "postgres", "redis", "migrate"} <= set(services)
    assert all(services[name]["build"] == "." for name in APP_SERVICES)
    assert services["beat"]["deploy"]["replicas"] == 1


def test_every_app_service_gets_what_production_settings_require(compose):
    for name in APP_SERVICES:
        environment = compose["services"][name]["environment"]
        assert environment["DJANGO_SETTINGS_MODULE"] == "toolhub.settings.production"
        assert set(REQUIRED_ENV) <= set(environment), name
        assert (
            "@postgres:" in environment["DATABASE_URL"]
            and "redis://redis:" in environment["CELERY_BROKER_URL"]
        )
        # The probes inside the network must be allowed hosts, or they would get 400.
        assert {"localhost", "web"} <= set(environment["ALLOWED_HOSTS"].split(","))


def test_services_wait_for_healthy_dependencies_and_check_their_own_health(compose):
    services = compose["services"]

    for name in ("web", "worker", "beat"):
        depends = services[name]["depends_on"]
        assert depends["postgres"]["condition"] == depends["redis"]["condition"] == "service_healthy"
        assert depends["migrate"]["condition"] == "service_completed_successfully"
    assert "/readyz" in " ".join(services["web"]["healthcheck"]["test"])
    assert "inspect ping" in " ".join(services["worker"]["healthcheck"]["test"])
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert "ping" in services["redis"]["healthcheck"]["test"]


def test_the_compose_commands_are_the_ones_the_readme_documents(compose):
    section = _readme_section("Deploying and scaling out")

    for name in APP_SERVICES:
        assert compose["services"][name]["command"] in section, name


def test_the_image_starts_what_the_web_service_runs(compose):
    dockerfile = (ROOT / "Dockerfile").read_text()
    cmd = re.search(r"^CMD (\[.*\])$", dockerfile, re.MULTILINE)

    assert cmd and yaml.safe_load(cmd.group(1)) == shlex.split(compose["services"]["web"]["command"])
    assert "USER toolhub" in dockerfile and "collectstatic" in dockerfile


def test_gunicorn_waits_longer_than_the_longest_tool_timeout(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    config = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    longest_tool_timeout = max(
        v.limit_value
        for v in ToolVersion._meta.get_field("timeout_s").validators
        if hasattr(v, "limit_value")
    )

    assert config["timeout"] > longest_tool_timeout
    assert config["workers"] >= 2 and issubclass(import_string(config["worker_class"]), ThreadWorker)
    assert config["logconfig_dict"]["handlers"]["console"]["formatter"] == "json"
    assert not config["logconfig_dict"]["loggers"]["gunicorn.access"]["handlers"]


def test_each_worker_hands_the_gil_over_sooner_than_python_does(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setenv("GUNICORN_SWITCH_INTERVAL_MS", "0.5")
    config = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    python_default = sys.getswitchinterval()
    try:
        config["post_fork"](server=None, worker=None)

        assert sys.getswitchinterval() == pytest.approx(0.0005)
    finally:
        sys.setswitchinterval(python_default)
