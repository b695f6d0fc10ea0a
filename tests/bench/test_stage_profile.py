"""The stage profiler of `make profile` still fits the pipeline it takes apart.

It wraps the gateway's functions by name: a renamed stage must fail here, in `make test`,
rather than in the middle of a benchmark.
"""

from __future__ import annotations

import importlib

import pytest
from django.test import Client

from apps.demo_shop.seed import demo_seed
from apps.gateway import services
from bench.calls import access_of, invoke_body
from bench.config import SEARCH_ARGUMENTS
from bench.stage_profile import FRAMEWORK, STAGES, Scenario, profile_stages


def test_every_wrapped_stage_exists():
    for module_name, attribute, _ in STAGES:
        owner = importlib.import_module(module_name)
        for name in attribute.split("."):
            owner = getattr(owner, name)


# The executor's worker thread has its own connection: the demo's orders must be committed.
@pytest.mark.django_db(transaction=True)
def test_a_readonly_call_is_taken_apart_by_stage_and_the_wrappers_are_removed_afterwards():
    access = access_of(demo_seed())
    headers = {"HTTP_AUTHORIZATION": access.search["Authorization"],
               "HTTP_X_TOOLHUB_SESSION": access.search["X-ToolHub-Session"]}
    original = services.prepare_call

    def search(client: Client, i: int) -> None:
        body = invoke_body(f"t-{i}", "search_orders", SEARCH_ARGUMENTS)
        response = client.post("/api/v1/invoke", body, content_type="application/json", **headers)
        assert response.json()["status"] == "ok"

    [profile] = profile_stages([Scenario("search", search)], calls=3, warm_up=1, rounds=1)

    assert profile.calls == 3
    stages = profile.stages
    assert stages["tool code"].queries == 3  # the search's one statement per call
    assert stages["counters (cache)"].cache_trips >= 3
    assert stages["validation: schema"].seconds > 0 and stages[FRAMEWORK].seconds > 0
    assert services.prepare_call is original
