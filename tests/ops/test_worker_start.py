"""What a starting gunicorn worker builds before its first request (gunicorn.conf.py), so that
the first call does not: each model's field lists, and the C library's name service."""

from __future__ import annotations

import socket

from django.apps import apps

from apps.audit.models import Invocation
from tests.gunicorn_conf import gunicorn_conf


def test_a_starting_worker_builds_every_models_field_lists(monkeypatch, tmp_path):
    # given: models whose field lists no instance has built yet
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    for model in apps.get_models():
        model._meta._expire_cache()
    assert "concrete_fields" not in Invocation._meta.__dict__

    # when
    gunicorn_conf()._fill_model_field_caches()

    # then: the invocation log's row of the first call, as every model, finds them built
    unbuilt = [model.__name__ for model in apps.get_models() if "concrete_fields" not in model._meta.__dict__]
    assert unbuilt == []


def test_a_starting_worker_makes_one_name_lookup_and_starts_when_it_fails(monkeypatch, tmp_path):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    looked_up: list[str] = []

    def getaddrinfo(host, *args, **kwargs):
        looked_up.append(host)
        raise socket.gaierror("no name service here")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    gunicorn_conf()._load_name_service()

    assert looked_up == ["localhost"]
