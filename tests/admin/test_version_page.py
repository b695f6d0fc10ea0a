"""The version page: lint findings, exports, diff against the previous version, try-it console."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from apps.audit.models import AuditEvent, Invocation
from apps.catalog.models import ToolVersion, VersionStatus
from apps.catalog.previews import export_previews
from apps.catalog.selectors import lint_definition
from apps.dashboards.console import sample_arguments, version_try
from tests.factories import ToolVersionFactory

from .test_version_admin import _button, _change, _draft_form

pytestmark = pytest.mark.django_db

LEAKY = {"type": "object", "properties": {"sql": {"type": "string", "description": "Raw SQL."}},
         "required": ["sql"], "additionalProperties": False}


def _try(version: ToolVersion) -> str:
    return reverse("admin:catalog_toolversion_try", args=[version.pk])


def test_the_page_shows_lint_findings_and_blocks_publishing_on_errors(world, acme_staff):
    draft = ToolVersionFactory(tool=world.acme.tool, number=2, parameters=LEAKY)

    page = acme_staff.get(_change(draft))
    published = acme_staff.post(_button(draft, "publish"), {"note": "go"}, follow=True)

    html = page.content.decode()
    assert "Publishing is blocked until the errors below are fixed." in html
    assert "parameters/properties/sql" in html and "injection surface" in html
    assert [f.code for f in page.context["lint_findings"] if f.is_error] == ["implementation-parameter"]
    assert "Acme_tool v2 cannot be published: lint found 1 error" in published.content.decode()
    assert ToolVersion.objects.get(pk=draft.pk).status == VersionStatus.DRAFT


def test_fixing_the_finding_lets_the_draft_publish(world, acme_staff, django_capture_on_commit_callbacks):
    draft = ToolVersionFactory(tool=world.acme.tool, number=2, parameters=LEAKY)
    fixed = {"type": "object", "properties": {"status": {"type": "string", "enum": ["paid", "open"],
                                                         "description": "Order status."}},
             "required": ["status"], "additionalProperties": False}

    acme_staff.post(_change(draft), _draft_form(draft, parameters=json.dumps(fixed)))
    page = acme_staff.get(_change(draft))
    with django_capture_on_commit_callbacks(execute=True):
        acme_staff.post(_button(draft, "publish"), {"note": "fixed"})

    assert not page.context["lint_has_errors"]
    assert ToolVersion.objects.get(pk=draft.pk).status == VersionStatus.PUBLISHED


def test_the_page_shows_the_diff_against_the_previous_version(world, acme_staff):
    draft = ToolVersionFactory(tool=world.acme.tool, number=2,
                               description="New words. At most 5. Do not guess.")

    page = acme_staff.get(_change(draft))

    html = page.content.decode()
    assert "Changes from v1 (published)" in html
    removed = [line.text for line in page.context["version_diff"] if line.kind == "remove"]
    added = [line.text for line in page.context["version_diff"] if line.kind == "add"]
    assert removed == ['-  "description": "acme tool: finds things.",']
    assert added == ['+  "description": "New words. At most 5. Do not guess.",']
    first = acme_staff.get(_change(world.acme.version)).content.decode()
    assert "This is the first version of acme_tool." in first


def test_the_exports_are_shown_side_by_side(world, acme_staff):
    page = acme_staff.get(_change(world.acme.version))

    previews = page.context["export_previews"]
    html = page.content.decode()
    assert [p.label for p in previews] == ["OpenAI", "Anthropic", "MCP"]
    assert all(p.tokens > 0 for p in previews)
    assert f"≈ {previews[0].tokens} tokens" in html


def test_export_previews_name_the_tool_in_each_format(world):
    previews = export_previews(lint_definition(world.acme.version))
    openai, anthropic, mcp = (p.tool for p in previews)
    assert openai["function"]["name"] == anthropic["name"] == mcp["name"] == "acme_tool"


def test_sample_arguments_leave_bound_fields_to_the_session():
    parameters = {"properties": {
        "status": {"type": "string", "enum": ["paid", "open"]}, "limit": {"type": "integer", "minimum": 1},
        "start": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}, "user_id": {"type": "string"},
    }}

    sample = sample_arguments(parameters, {"user_id": {"source": "session.subject", "policy": "must_match"}})

    assert sample["status"] == "paid" and sample["limit"] == 1 and len(sample["start"]) == 10
    assert "user_id" not in sample


def test_the_console_runs_a_dry_run_as_an_agent_and_shows_the_envelope(world, acme_staff):
    version = world.acme.version

    form = acme_staff.get(_try(version))
    response = acme_staff.post(_try(version), {
        "agent": world.acme.agent.pk, "subject": "u-1", "arguments": '{"query": "shoes"}',
    })

    assert json.loads(form.context["form"].initial["arguments"]) == {"query": "example"}
    envelope = response.context["envelope"]
    assert envelope["status"] == "ok" and envelope["dry_run"] is True
    assert envelope["data"]["would_run"]["arguments"] == {"query": "shoes"}
    assert "The envelope the model reads" in response.content.decode()
    logged = Invocation.objects.get(task_id__startswith="console-")
    assert logged.dry_run and logged.agent == world.acme.agent
    assert AuditEvent.objects.get(action="tool_version.try").actor == "admin:acme-staff"


def test_the_console_shows_the_error_the_model_would_read(world, acme_staff):
    response = acme_staff.post(_try(world.acme.version), {
        "agent": world.acme.agent.pk, "subject": "", "arguments": '{"query": 7}',
    })

    envelope = response.context["envelope"]
    assert envelope["kind"] == "invalid_args" and envelope["details"][0]["path"] == "/query"


def test_a_real_call_runs_a_readonly_tool(world, acme_staff):
    version = ToolVersion.objects.get(pk=world.acme.version.pk)
    ToolVersion.objects.filter(pk=version.pk).update(executor_config={"callable": "tests.echo"})

    response = acme_staff.post(_try(version), {
        "agent": world.acme.agent.pk, "subject": "u-1", "arguments": '{"query": "shoes"}', "real": "on",
    })

    envelope = response.context["envelope"]
    assert envelope["status"] in ("ok", "empty") and "dry_run" not in envelope
    assert not Invocation.objects.get(task_id__startswith="console-").dry_run


def test_a_real_call_of_a_write_is_refused(world, acme_staff):
    ToolVersion.objects.filter(pk=world.acme.version.pk).update(side_effect="write")
    version = ToolVersion.objects.get(pk=world.acme.version.pk)

    page = acme_staff.get(_try(version))
    with pytest.raises(ValidationError, match="only readonly tools run for real from the console"):
        version_try(version=version, agent=world.acme.agent, subject="u-1", arguments='{"query": "x"}',
                    real=True, actor="admin:acme-staff")

    assert page.context["form"].fields["real"].disabled
    assert "Only readonly tools run for real from here" in page.content.decode()
    assert not Invocation.objects.filter(task_id__startswith="console-").exists()


def test_the_console_offers_only_the_tenants_agents(world, acme_staff):
    shared = acme_staff.get(_try(world.shared_version))
    own = acme_staff.get(_try(world.acme.version))
    foreign = acme_staff.post(_try(world.acme.version), {
        "agent": world.globex.agent.pk, "arguments": '{"query": "x"}',
    })

    assert set(shared.context["form"].fields["agent"].queryset) == {world.acme.agent}
    assert set(own.context["form"].fields["agent"].queryset) == {world.acme.agent}
    assert "agent" in foreign.context["form"].errors
    assert acme_staff.get(_try(world.globex.version)).status_code == 302
