"""The contract every registered executor keeps, checked for each kind the gateway discovers.

A new kind is a new package under apps/gateway/executors/: it registers an Executor, the
catalog learns its kind and config schema from it, its failures fall into the classes of
base.py, and a kind nobody registered is refused clearly. A kind added without a line in
UNREACHABLE below fails here, on purpose: say how a call of it fails before sending.
"""

from __future__ import annotations

import pkgutil
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from jsonschema import Draft202012Validator

import apps.gateway.executors as executors_package
from apps.catalog.definitions import validate_definition
from apps.catalog.models import ToolVersion
from apps.common import executor_kinds
from apps.common.executor_kinds import executor_kind, executor_kind_choices
from apps.gateway.executors import (
    Executor,
    UnknownExecutorKind,
    discover,
    execute,
    executor_for,
    reconcile,
    register,
    registered,
)
from apps.gateway.executors import registry as executor_registry
from apps.gateway.executors.base import (
    ExecutionAmbiguous,
    ExecutionError,
    ExecutionNotSent,
    ExecutionRejected,
    ExecutionRequest,
    ExecutionTimedOut,
    ReconcileAnswer,
)
from tests.gateway.callables import RUNS

# For each kind, a config whose call cannot reach anything: it must fail before sending.
UNREACHABLE: dict[str, dict[str, Any]] = {
    "python": {"callable": "tests.no_such_callable"},
    "http": {"upstream": "no-such-upstream", "method": "GET", "path": "/orders"},
    "mcp": {"upstream": "no-such-upstream", "tool": "track_shipment"},
    # A code run of no agent's: nothing may call tools for nobody, so nothing runs.
    "sandbox": {},
}
FAILURE_CLASSES = (ExecutionRejected, ExecutionNotSent, ExecutionTimedOut, ExecutionAmbiguous)
KINDS = sorted(executor.kind for executor in discover())


def _request(config: dict[str, Any], *, idempotency_key: str | None = None) -> ExecutionRequest:
    return ExecutionRequest(
        tenant_slug="acme", task_id="t-1", call_id="c-1", tool_name="contract_tool", version_number=1,
        arguments={}, timeout_s=2, config=config, idempotency_key=idempotency_key,
    )


def test_every_executor_package_is_discovered_and_registers_its_own_kind():
    # given: the packages beside the registry
    packages = {m.name for m in pkgutil.iter_modules(executors_package.__path__) if m.ispkg}

    # when
    kinds = {executor.kind for executor in discover()}

    # then: each package is one kind, named like it; the three of today at least
    assert kinds == packages
    assert {"python", "http", "mcp"} <= kinds


@pytest.mark.parametrize("kind", KINDS)
def test_an_executor_declares_its_kind_and_callable_run_and_reconcile(kind):
    executor = executor_for(kind)

    assert isinstance(executor, Executor)
    assert executor.kind == kind
    assert executor.label
    assert callable(executor.run)
    assert callable(executor.reconcile)
    Draft202012Validator.check_schema(executor.config_schema)


@pytest.mark.parametrize("kind", KINDS)
def test_the_catalog_sees_the_kind_and_its_schema(kind):
    # given
    executor = executor_for(kind)

    # when
    declared = executor_kind(kind)

    # then: the catalog's declaration is the executor's, and the version's field offers it
    assert declared is executor
    assert (kind, executor.label) in executor_kind_choices()
    assert (kind, executor.label) in ToolVersion._meta.get_field("executor").flatchoices


@pytest.mark.parametrize("kind", KINDS)
def test_the_catalog_checks_a_config_against_the_kinds_schema(kind):
    errors = validate_definition(
        parameters={"type": "object", "properties": {}}, normalizers={}, context_bindings={}, rules=[],
        executor=kind, executor_config=["not", "an", "object"], approval={},
    )

    assert "(top): ['not', 'an', 'object'] is not of type 'object'" in errors["executor_config"]


def test_every_kind_says_how_a_call_of_it_fails_before_sending():
    assert set(KINDS) <= set(UNREACHABLE), "add the new kind to UNREACHABLE"


@pytest.mark.django_db
@pytest.mark.parametrize("kind", KINDS)
def test_a_call_that_reaches_nothing_fails_as_not_applied(kind):
    # given: a config that names nothing that exists
    request = _request(UNREACHABLE[kind])

    # when
    with pytest.raises(ExecutionError) as failed:
        execute(kind, request)

    # then: classified by what is known of the side effect: certainly nothing applied
    assert isinstance(failed.value, FAILURE_CLASSES)
    assert isinstance(failed.value, ExecutionRejected | ExecutionNotSent)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", KINDS)
def test_reconciling_a_call_nobody_can_ask_about_answers_without_raising(kind):
    answer = reconcile(kind, _request(UNREACHABLE[kind], idempotency_key="acme/t-1/c-1"))

    assert isinstance(answer, ReconcileAnswer)
    assert answer.found is None


@pytest.mark.django_db
def test_a_kind_nobody_registered_is_refused_clearly_and_nothing_runs():
    # given
    RUNS.clear()
    request = _request({"callable": "tests.echo"})

    # when / then: the gateway refuses it as unavailable, naming the kind in the cause
    with pytest.raises(ExecutionRejected) as refused:
        execute("no_such_kind", request)
    assert refused.value.error.kind == "unavailable"
    assert "not installed" in refused.value.error.message
    assert isinstance(refused.value.__cause__, UnknownExecutorKind)
    assert "no_such_kind" in str(refused.value.__cause__)
    assert not RUNS

    # and: reconciling it goes straight to triage, saying why
    answer = reconcile("no_such_kind", request)
    assert (answer.found, answer.retry) == (None, False)
    assert "no executor of kind 'no_such_kind' is registered" in answer.note

    # and: the registry and the catalog refuse it too
    with pytest.raises(UnknownExecutorKind, match="registered: .*http"):
        executor_for("no_such_kind")
    assert executor_kind("no_such_kind") is None


@pytest.mark.django_db
def test_a_version_of_a_kind_nobody_registered_is_refused_on_save():
    version = ToolVersion(executor="no_such_kind", description="d", side_effect="readonly")

    with pytest.raises(ValidationError) as refused:
        version.clean_fields(exclude=["tool"])

    assert refused.value.message_dict["executor"] == ["Value 'no_such_kind' is not a valid choice."]


def test_a_new_kind_is_a_registration_the_catalog_follows_without_a_migration(monkeypatch):
    # given: a registry of its own for this test, undone after it
    monkeypatch.setattr(executor_registry, "_EXECUTORS", dict(executor_registry._EXECUTORS))
    monkeypatch.setattr(executor_kinds, "_KINDS", dict(executor_kinds._KINDS))

    # when: a kind registers
    register(Executor(
        kind="sandbox", label="Sandbox", run=lambda request: {"ran": True},
        reconcile=lambda request: ReconcileAnswer(found=None, retry=False),
        config_schema={"type": "object", "required": ["image"]},
    ))

    # then: it runs, the version's field offers it, its schema checks configs, and the
    # field's choices stay a callable (the migration autodetector sees no change)
    assert execute("sandbox", _request({})) == {"ran": True}
    field = ToolVersion._meta.get_field("executor")
    assert ("sandbox", "Sandbox") in field.flatchoices
    assert field.deconstruct()[3]["choices"] is executor_kind_choices
    errors = validate_definition(
        parameters={"type": "object", "properties": {}}, normalizers={}, context_bindings={}, rules=[],
        executor="sandbox", executor_config={}, approval={},
    )
    assert errors["executor_config"] == ["(top): 'image' is a required property"]
    assert "sandbox" in {executor.kind for executor in registered()}
