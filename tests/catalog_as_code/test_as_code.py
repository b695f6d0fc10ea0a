"""The catalog as code: `catalog_export` and `catalog_apply`."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import CommandError, call_command

from apps.audit.models import AuditEvent
from apps.catalog.models import Tool, Toolset, ToolVersion, VersionStatus
from apps.catalog.services import (
    tool_save,
    version_create_draft,
    version_create_draft_from,
    version_deprecate,
    version_publish,
)
from apps.catalog_as_code.document import document_yaml
from apps.demo_shop.seed import demo_seed
from apps.tenancy.models import Grant, Tenant, TenantPolicy
from apps.tenancy.services import grant_save, tenant_policy_save
from tests.factories import AgentFactory, TenantFactory

ACTOR = "test"
DEFINITION = {
    "description": "Finds notes by text. At most 20 results. Do not use it to change anything.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "Words the note contains."}},
        "required": ["query"],
        "additionalProperties": False,
    },
    "side_effect": "readonly",
    "executor": "python",
    "executor_config": {"callable": "tests.echo"},
}


def export(capsys, slug: str) -> str:
    capsys.readouterr()
    call_command("catalog_export", "--tenant", slug)
    return capsys.readouterr().out


def apply(capsys, tmp_path, text: str, *args: str) -> str:
    path = tmp_path / "catalog.yaml"
    path.write_text(text)
    capsys.readouterr()
    call_command("catalog_apply", str(path), *args)
    return capsys.readouterr().out


def rows() -> dict[str, int]:
    """How many rows of each kind the catalog as code writes, and the audit trail."""
    return {
        model.__name__: model.objects.count()
        for model in (Tool, ToolVersion, Toolset, Grant, TenantPolicy, AuditEvent)
    }


def tool_file(*, tenant: str, versions: list[dict], **extra) -> str:
    document = {"tenant": tenant, "tools": {"search_notes": {"summary": "Notes.", "versions": versions}}}
    return yaml.safe_dump({**document, **extra})


@pytest.fixture
def notes_tenant():
    tenant = TenantFactory(slug="notes")
    AgentFactory(tenant=tenant, name="note-bot")
    return tenant


def _delete_catalog_of(tenant: Tenant) -> None:
    """A fresh database as far as this tenant's catalog goes (the shared catalog, and the
    platform's grants of it, stay)."""
    TenantPolicy.objects.filter(tenant=tenant).delete()
    Grant.objects.filter(tenant=tenant, tool__tenant=tenant).delete()
    Toolset.objects.filter(tenant=tenant).delete()
    ToolVersion.objects.filter(tool__tenant=tenant).delete()
    Tool.objects.filter(tenant=tenant).delete()


@pytest.mark.django_db
def test_export_apply_to_an_empty_catalog_and_export_again_reads_the_same(capsys, tmp_path):
    # given the demo, with a deprecated version, a draft, a replacement, a pin and policies
    demo_seed()
    tenant = Tenant.objects.get(slug="demo")
    get_order = Tool.objects.get(tenant=tenant, name="get_order")
    v1 = get_order.versions.get(number=1)
    v2 = version_publish(version=version_create_draft_from(version=v1, actor=ACTOR), actor=ACTOR)
    version_deprecate(version=v1, actor=ACTOR)
    version_create_draft(tool=get_order, actor=ACTOR, changelog="Work in progress.", **DEFINITION)
    legacy = tool_save(tool=Tool(tenant=tenant, name="legacy_lookup", summary="Old."), actor=ACTOR)
    legacy.replaced_by = get_order
    tool_save(tool=legacy, actor=ACTOR)
    grant_save(grant=Grant(tenant=tenant, tool=get_order, pinned_version=v2), actor=ACTOR, by_platform=False)
    tenant_policy_save(policy=TenantPolicy(tenant=tenant, rate_limit_per_minute=30), actor=ACTOR)
    tenant_policy_save(
        policy=TenantPolicy(tenant=tenant, tool=get_order, task_call_budget=5, requires_approval=True),
        actor=ACTOR,
    )
    exported = export(capsys, "demo")
    # when the tenant's catalog is gone and the file is applied
    _delete_catalog_of(tenant)
    out = apply(capsys, tmp_path, exported)

    # then exporting again gives the same text, and the file is reviewable: the shared
    # refund_payment is named where it is used, never exported as the tenant's
    assert "Applied" in out
    assert export(capsys, "demo") == exported
    document = yaml.safe_load(exported)
    assert sorted(document["tools"]) == [
        "cancel_order", "get_order", "legacy_lookup", "list_order_refunds", "pickup_status",
        "run_python", "schedule_pickup", "search_orders", "track_shipment",
    ]
    assert "refund_payment" in document["toolsets"]["support"]["phases"]["resolve"]
    assert [(v["number"], v["status"]) for v in document["tools"]["get_order"]["versions"]] == [
        (1, "deprecated"), (2, "published"), (3, "draft"),
    ]


@pytest.mark.django_db
def test_plan_lists_the_changes_and_writes_nothing(notes_tenant, capsys, tmp_path):
    # given an empty tenant and a file with a published tool granted to its agent
    text = tool_file(
        tenant="notes", versions=[{"number": 1, "status": "published", **DEFINITION}],
        grants=[{"tool": "search_notes", "agent": "note-bot"}],
    )
    before = rows()

    # when the plan is asked for
    out = apply(capsys, tmp_path, text, "--plan")

    # then it says what would happen, and nothing happened
    assert "+ tool search_notes" in out
    assert "+ search_notes v1: new draft" in out
    assert "> search_notes v1: publish" in out
    assert "+ grant search_notes to note-bot, latest published version" in out
    assert "nothing was written (--plan)" in out
    assert rows() == before


@pytest.mark.django_db
def test_a_second_apply_changes_nothing_and_says_so(notes_tenant, capsys, tmp_path):
    text = tool_file(
        tenant="notes", versions=[{"number": 1, "status": "published", **DEFINITION}],
        toolsets={"notes": {"tools": ["search_notes"], "phases": {"find": ["search_notes"]}}},
        grants=[{"tool": "search_notes", "agent": None}],
        policies=[{"tool": "search_notes", "rate_limit_per_minute": 10}],
    )
    apply(capsys, tmp_path, text)
    after_first = rows()

    out = apply(capsys, tmp_path, text)

    assert out.strip() == f"No changes: the catalog of notes already matches {tmp_path / 'catalog.yaml'}."
    assert rows() == after_first
    assert AuditEvent.objects.filter(actor="cli:catalog_apply", action="tool_version.publish").count() == 1


@pytest.mark.django_db
def test_a_changed_description_of_a_published_version_becomes_the_next_version(
    notes_tenant, capsys, tmp_path
):
    # given search_notes v1 published from a file
    text = tool_file(tenant="notes", versions=[{"number": 1, "status": "published", **DEFINITION}])
    apply(capsys, tmp_path, text)
    document = yaml.safe_load(export(capsys, "notes"))

    # when v1's description is edited in the file and applied (twice)
    changed = "Finds notes by text, newest first. At most 20 results. Do not use it to change anything."
    document["tools"]["search_notes"]["versions"][0]["description"] = changed
    out = apply(capsys, tmp_path, yaml.safe_dump(document))
    again = apply(capsys, tmp_path, yaml.safe_dump(document))

    # then v1 is untouched and v2 carries the change, published; the second apply is a no-op
    assert "+ search_notes v2: new draft with the file's v1 (v1 is published and never changes)" in out
    versions = {v.number: v for v in ToolVersion.objects.filter(tool__name="search_notes")}
    assert versions[1].description == DEFINITION["description"]
    assert (versions[2].description, versions[2].status) == (changed, VersionStatus.PUBLISHED)
    assert again.startswith("No changes")


@pytest.mark.django_db
def test_an_invalid_file_is_refused_with_the_path_of_each_problem_and_nothing_is_written(
    notes_tenant, capsys, tmp_path
):
    # given a file whose second tool has an unknown side effect, and whose first would publish
    # with a lint error (a raw SQL parameter)
    leaky = {**DEFINITION, "parameters": {
        "type": "object", "properties": {"sql": {"type": "string", "description": "A WHERE clause."}},
        "required": ["sql"], "additionalProperties": False,
    }}
    text = yaml.safe_dump({"tenant": "notes", "tools": {
        "leaky_notes": {"versions": [{"number": 1, "status": "published", **leaky}]},
        "search_notes": {"versions": [
            {"number": 1, "status": "published", **DEFINITION, "side_effect": "sometimes"},
        ]},
    }})
    before = rows()

    with pytest.raises(CommandError) as refused:
        apply(capsys, tmp_path, text)

    message = str(refused.value)
    assert "nothing was written" in message
    assert "tools.search_notes.versions[0].side_effect: Value 'sometimes' is not a valid choice." in message
    assert "tools.leaky_notes.versions[0]: leaky_notes v1 cannot be published: lint found" in message
    assert rows() == before


@pytest.mark.django_db
def test_a_malformed_file_is_refused_with_paths_before_anything_runs(notes_tenant, capsys, tmp_path):
    text = yaml.safe_dump({"tenant": "notes", "tools": {"search_notes": {"versions": [
        {"number": 1, "status": "live", **DEFINITION},
        {"number": 2, **DEFINITION, "timeout": 3},
    ]}}, "grants": [{"tool": 7}]})

    with pytest.raises(CommandError) as refused:
        apply(capsys, tmp_path, text)

    message = str(refused.value)
    assert "tools.search_notes.versions[0].status: unknown status 'live'" in message
    assert "tools.search_notes.versions[1].timeout: unknown key" in message
    assert "grants[0].tool: expected a tool name, found int: 7." in message


@pytest.mark.django_db
def test_a_tenant_cannot_reference_another_tenants_tools(notes_tenant, capsys, tmp_path):
    # given tenant other with its own tool private_search
    other = TenantFactory(slug="other")
    tool_save(tool=Tool(tenant=other, name="private_search"), actor=ACTOR)
    text = yaml.safe_dump({
        "tenant": "notes",
        "toolsets": {"mine": {"tools": ["private_search"]}},
        "grants": [{"tool": "private_search", "agent": "note-bot"}],
        "policies": [{"tool": "private_search", "task_call_budget": 3}],
    })
    before = rows()

    with pytest.raises(CommandError) as refused:
        apply(capsys, tmp_path, text)

    message = str(refused.value)
    for path in ("toolsets.mine.tools", "grants[0].tool", "policies[0].tool"):
        assert f"{path}: no tool named 'private_search' among this tenant's and the shared ones" in message
    assert rows() == before


@pytest.mark.django_db
def test_a_tenants_file_cannot_shadow_a_shared_tool_nor_name_platform_settings(
    notes_tenant, capsys, tmp_path
):
    tool_save(tool=Tool(tenant=None, name="shared_search"), actor=ACTOR)
    secret = {**DEFINITION, "executor": "http", "executor_config": {
        "url": "https://payments.example/refunds", "method": "POST", "secret_ref": "PAYMENTS_API_KEY",
    }}
    text = yaml.safe_dump({"tenant": "notes", "tools": {
        "shared_search": {"versions": [{"number": 1, **DEFINITION}]},
        "pay": {"versions": [{"number": 1, **secret}]},
    }})

    with pytest.raises(CommandError) as refused:
        apply(capsys, tmp_path, text)

    message = str(refused.value)
    assert "tools.shared_search: the shared catalog has a tool named shared_search" in message
    assert "tools.pay.versions[0].executor_config:" in message
    assert not Tool.objects.filter(tenant=notes_tenant).exists()


@pytest.mark.django_db
def test_a_file_cannot_name_a_tool_like_a_built_in_one(notes_tenant, capsys, tmp_path):
    text = yaml.safe_dump({"tenant": "notes", "tools": {
        "request_capability": {"versions": [{"number": 1, "status": "published", **DEFINITION}]},
    }})

    with pytest.raises(CommandError) as refused:
        apply(capsys, tmp_path, text)

    assert "tools.request_capability.name: request_capability is the name of a tool ToolHub itself" in (
        str(refused.value)
    )
    assert not Tool.objects.filter(name="request_capability").exists()


@pytest.mark.django_db
def test_a_tenants_file_cannot_grant_itself_a_shared_tool(notes_tenant, capsys, tmp_path):
    # given a shared tool the platform has not granted to notes
    shared = tool_save(tool=Tool(tenant=None, name="refund_payment"), actor=ACTOR)
    ToolVersion.objects.create(tool=shared, number=1, status=VersionStatus.PUBLISHED, **DEFINITION)
    text = yaml.safe_dump({"tenant": "notes", "grants": [{"tool": "refund_payment", "agent": "note-bot"}]})
    before = rows()

    # when the tenant's file grants it to the tenant's agent
    with pytest.raises(CommandError) as refused:
        apply(capsys, tmp_path, text)

    # then the file is refused at the grant, and nothing is written
    assert "grants[0].tool: refund_payment is a shared tool: only the platform" in str(refused.value)
    assert rows() == before


@pytest.mark.django_db
def test_a_file_moves_versions_forward_and_edits_drafts_in_place(notes_tenant, capsys, tmp_path):
    # given v1 published and v2 a draft
    apply(capsys, tmp_path, tool_file(tenant="notes", versions=[
        {"number": 1, "status": "published", **DEFINITION},
        {"number": 2, "status": "draft", **DEFINITION, "max_chars": 3000},
    ]))

    # when the file deprecates v1 and publishes v2 with another max_chars
    out = apply(capsys, tmp_path, tool_file(tenant="notes", versions=[
        {"number": 1, "status": "deprecated", **DEFINITION},
        {"number": 2, "status": "published", **DEFINITION, "max_chars": 4000},
    ]))

    # then v2 is edited as the draft it was, then published; no v3
    assert out.splitlines()[1:4] == [
        "  > search_notes v1: deprecate",
        "  ~ search_notes v2: edit the draft",
        "  > search_notes v2: publish",
    ]
    stored = ToolVersion.objects.filter(tool__name="search_notes")
    versions = {v.number: (v.status, v.max_chars) for v in stored}
    assert versions == {1: ("deprecated", 8000), 2: ("published", 4000)}


@pytest.mark.django_db
def test_a_section_in_the_file_is_the_whole_truth_and_an_absent_one_is_left_alone(
    notes_tenant, capsys, tmp_path
):
    # given a tool granted to every agent and to note-bot, with a policy
    apply(capsys, tmp_path, tool_file(
        tenant="notes", versions=[{"number": 1, "status": "published", **DEFINITION}],
        grants=[{"tool": "search_notes", "agent": None}, {"tool": "search_notes", "agent": "note-bot"}],
        policies=[{"tool": None, "rate_limit_per_minute": 5}],
    ))

    # when a file lists only one grant and no policies section
    out = apply(capsys, tmp_path, yaml.safe_dump({
        "tenant": "notes", "grants": [{"tool": "search_notes", "agent": "note-bot"}],
    }))

    # then the other grant is gone, the policy and the tool stay
    assert "- grant search_notes to every agent" in out
    assert list(Grant.objects.values_list("agent__name", flat=True)) == ["note-bot"]
    assert TenantPolicy.objects.get().rate_limit_per_minute == 5
    assert Tool.objects.filter(tenant=notes_tenant, name="search_notes").exists()


@pytest.mark.parametrize("text", [
    "First line.\nSecond line.\n",
    "No final line break.\nSecond line.",
    "Trailing space \nand a tab\there.",
    "yes",
    "  indented first line\nthen not",
])
def test_text_reads_back_exactly_as_it_was_written(text):
    document = {"tenant": "notes", "tools": {"t": {"summary": text, "versions": []}}}

    written = document_yaml(document)

    assert yaml.safe_load(written) == document


@pytest.mark.django_db
def test_a_versions_output_schema_and_annotations_travel_with_the_file(notes_tenant, capsys, tmp_path):
    # given search_notes v1 with an output schema and the annotations an import brought
    result = {"type": "object", "properties": {"notes": {"type": "array"}}, "required": ["notes"]}
    declared = {**DEFINITION, "output_schema": result, "annotations": {"title": "Search notes"}}
    text = tool_file(tenant="notes", versions=[{"number": 1, "status": "published", **declared}])
    apply(capsys, tmp_path, text)
    exported = export(capsys, "notes")

    # when the catalog is gone and the exported file applied
    _delete_catalog_of(notes_tenant)
    apply(capsys, tmp_path, exported)

    # then the version carries both again, and the file says them
    version = ToolVersion.objects.get(tool__name="search_notes")
    assert (version.output_schema, version.annotations) == (result, {"title": "Search notes"})
    entry = yaml.safe_load(exported)["tools"]["search_notes"]["versions"][0]
    assert entry["output_schema"]["required"] == ["notes"]
    assert entry["annotations"] == {"title": "Search notes"}
