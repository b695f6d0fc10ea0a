"""The catalog as code carries what request_capability may open: phases that gate, and the
policies' open_on_request and max_opened_per_task."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import CommandError

from apps.catalog.models import Tool, Toolset, ToolsetPhase, ToolVersion, VersionStatus
from apps.catalog.services import tool_save, toolset_save
from apps.tenancy.models import TenantPolicy
from apps.tenancy.services import tenant_policy_save
from tests.catalog_as_code.test_as_code import ACTOR, DEFINITION, _delete_catalog_of, apply, export, rows
from tests.factories import AgentFactory, TenantFactory

TOOLS = {
    "search_notes": {"summary": "Notes.", "versions": [{"number": 1, "status": "published", **DEFINITION}]},
    "delete_note": {"summary": "Deletes.", "versions": [{"number": 1, "status": "published", **DEFINITION}]},
}


@pytest.fixture
def notes_tenant():
    tenant = TenantFactory(slug="notes")
    AgentFactory(tenant=tenant, name="note-bot")
    return tenant


def notes_file(**sections) -> str:
    return yaml.safe_dump({"tenant": "notes", "tools": TOOLS, **sections})


def _published(tenant, name: str) -> Tool:
    tool = tool_save(tool=Tool(tenant=tenant, name=name, summary="Notes."), actor=ACTOR)
    ToolVersion.objects.create(tool=tool, number=1, status=VersionStatus.PUBLISHED, **DEFINITION)
    return tool


@pytest.mark.django_db
def test_a_gating_phase_goes_round_trip_and_a_pruning_one_stays_a_list(notes_tenant, capsys, tmp_path):
    # given a toolset whose `find` phase only prunes and whose `clean_up` phase gates
    search, delete = _published(notes_tenant, "search_notes"), _published(notes_tenant, "delete_note")
    toolset_save(
        toolset=Toolset(tenant=notes_tenant, name="notes"), tools=[search, delete],
        phases={"find": [search], "clean_up": [delete, search]}, gates={"clean_up"}, actor=ACTOR,
    )
    exported = export(capsys, "notes")

    # when the catalog is gone and the exported file is applied
    _delete_catalog_of(notes_tenant)
    out = apply(capsys, tmp_path, exported)

    # then the plan said so, the phases are as they were and the export reads the same
    assert "+ toolset notes: phase clean_up gates" in out
    assert dict(ToolsetPhase.objects.values_list("name", "gates")) == {"find": False, "clean_up": True}
    assert export(capsys, "notes") == exported
    gating = "      clean_up:\n        gates: true\n        tools:\n        - delete_note\n"
    assert f"    phases:\n{gating}" in exported
    assert yaml.safe_load(exported)["toolsets"]["notes"]["phases"]["find"] == ["search_notes"]


@pytest.mark.django_db
def test_the_opening_limits_of_policies_go_round_trip_and_defaults_are_not_written(
    notes_tenant, capsys, tmp_path
):
    # given a tenant-wide policy that opens at most 2 tools a task, and one that never opens
    # search_notes; delete_note's policy leaves both at their defaults
    search, delete = _published(notes_tenant, "search_notes"), _published(notes_tenant, "delete_note")
    tenant_policy_save(policy=TenantPolicy(tenant=notes_tenant, max_opened_per_task=2), actor=ACTOR)
    tenant_policy_save(policy=TenantPolicy(tenant=notes_tenant, tool=search, open_on_request=False),
                       actor=ACTOR)
    tenant_policy_save(policy=TenantPolicy(tenant=notes_tenant, tool=delete, task_call_budget=1), actor=ACTOR)
    exported = export(capsys, "notes")

    _delete_catalog_of(notes_tenant)
    out = apply(capsys, tmp_path, exported)

    assert "+ policy for every tool: max_opened_per_task null → 2" in out
    assert "+ policy for search_notes: open_on_request true → false" in out
    assert export(capsys, "notes") == exported
    policies = {p["tool"]: p for p in yaml.safe_load(exported)["policies"]}
    assert policies[None]["max_opened_per_task"] == 2 and "open_on_request" not in policies[None]
    assert policies["search_notes"]["open_on_request"] is False
    assert not {"open_on_request", "max_opened_per_task"} & set(policies["delete_note"])
    stored = {p.tool_id: (p.open_on_request, p.max_opened_per_task) for p in TenantPolicy.objects.all()}
    assert sorted(stored.values(), key=str) == sorted([(True, 2), (False, None), (True, None)], key=str)


@pytest.mark.django_db
def test_the_plan_shows_a_change_of_gating_and_of_either_opening_limit(notes_tenant, capsys, tmp_path):
    # given a file applied with a pruning phase and a plain tenant-wide policy
    toolsets = {"notes": {"tools": ["search_notes"], "phases": {"find": ["search_notes"]}}}
    apply(capsys, tmp_path, notes_file(toolsets=toolsets, policies=[{"tool": None, "task_call_budget": 5}]))
    before = rows()

    # when the phase is made to gate and both limits change, and the plan is asked for
    find = {"gates": True, "tools": ["search_notes"]}
    gating = {"notes": {"tools": ["search_notes"], "phases": {"find": find}}}
    policies = [{"tool": None, "task_call_budget": 5, "open_on_request": False, "max_opened_per_task": 0}]
    out = apply(capsys, tmp_path, notes_file(toolsets=gating, policies=policies), "--plan")

    # then each change is named, and nothing was written
    assert "~ toolset notes: phase find gates" in out
    assert "~ policy for every tool: max_opened_per_task null → 0, open_on_request true → false" in out
    assert rows() == before and not ToolsetPhase.objects.filter(gates=True).exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("toolsets", "policies", "problem"), [
    ({"notes": {"phases": {"find": {"gates": "yes", "tools": ["search_notes"]}}}}, [],
     "toolsets.notes.phases.find.gates: expected true (its tools wait for the task to reach this phase) "
     "or false (it only prunes), found str: 'yes'."),
    ({"notes": {"phases": {"find": {"gate": True, "tools": []}}}}, [],
     "toolsets.notes.phases.find.gate: unknown key; allowed: gates, tools."),
    ({"notes": {"phases": {"find": {"gates": True, "tools": "search_notes"}}}}, [],
     "toolsets.notes.phases.find.tools: expected a list of tool names, found str"),
    ({"notes": {"phases": {"find": 3}}}, [],
     "toolsets.notes.phases.find: expected a list of tool names, or a mapping with `tools` and `gates"),
    ({}, [{"tool": None, "max_opened_per_task": -1}],
     "policies[0].max_opened_per_task: Ensure this value is greater than or equal to 0."),
    ({}, [{"tool": None, "open_on_request": "sometimes"}],
     "policies[0].open_on_request: “sometimes” value must be either True or False."),
])
def test_a_bad_gate_or_opening_limit_is_refused_at_its_path_and_nothing_is_written(
    notes_tenant, capsys, tmp_path, toolsets, policies, problem
):
    text = notes_file(toolsets=toolsets, policies=policies)
    before = rows()

    with pytest.raises(CommandError) as refused:
        apply(capsys, tmp_path, text)

    assert problem in str(refused.value)
    assert rows() == before


@pytest.mark.django_db
def test_a_file_without_the_new_keys_applies_as_before(notes_tenant, capsys, tmp_path):
    # given a file written before phases could gate and policies limit opening
    text = notes_file(
        toolsets={"notes": {"tools": ["search_notes"], "phases": {"find": ["search_notes"], "empty": None}}},
        policies=[{"tool": None, "rate_limit_per_minute": 10}],
    )

    out = apply(capsys, tmp_path, text)
    again = apply(capsys, tmp_path, text)

    # then no phase gates, the policy keeps the defaults, and the export names neither
    assert "+ toolset notes\n" in out and "+ policy for every tool: rate_limit_per_minute null → 10" in out
    assert again.startswith("No changes")
    assert not ToolsetPhase.objects.filter(gates=True).exists()
    policy = TenantPolicy.objects.get()
    assert (policy.open_on_request, policy.max_opened_per_task) == (True, None)
    exported = export(capsys, "notes")
    assert "gates" not in exported and "open_on_request" not in exported and "max_opened" not in exported
