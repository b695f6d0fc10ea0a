"""What a curator reads on the admin's pages: titles, labels and help that say what things
are, and forms and consoles that behave like the rest of the admin."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.apps import apps
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from apps.audit.models import Invocation
from apps.catalog.models import ToolVersion
from apps.ledger.models import Approval
from tests.factories import ToolVersionFactory

pytestmark = pytest.mark.django_db

DEMO_TASKS = ["demo-20261201-221821-timeout", "demo-20261201-221821-triage", "demo-20261201-221821-approval"]


def _approval(world) -> Approval:
    return Approval.objects.create(
        entry=world.acme.entry, tenant=world.acme.tenant, version=world.acme.version, args_hash="h",
        reason="refunds above 45000 cents", expires_at=timezone.now() + timedelta(hours=1),
    )


def test_an_approval_is_titled_by_its_tool_and_task_not_by_an_id(world, superuser):
    approval = _approval(world)

    page = superuser.get(reverse("admin:ledger_pendingapproval_change", args=[approval.pk])).content.decode()

    assert "acme_tool v1 for task acme-task, call call_1 (pending)" in page
    assert str(world.acme.entry.pk) not in page.split('id="content-main"')[0]  # title and breadcrumbs


def test_the_admin_index_offers_approvals_once_and_the_queue_links_to_the_decided_ones(world, superuser):
    index = superuser.get(reverse("admin:index")).content.decode()
    queue = superuser.get(reverse("admin:ledger_pendingapproval_changelist")).content.decode()

    assert f'href="{reverse("admin:ledger_pendingapproval_changelist")}"' in index
    assert f'href="{reverse("admin:ledger_approval_changelist")}"' not in index
    assert f'href="{reverse("admin:ledger_approval_changelist")}"' in queue
    assert superuser.get(reverse("admin:ledger_approval_changelist")).status_code == 200


def test_the_invocation_log_tells_the_demos_tasks_apart(world, superuser):
    Invocation.objects.bulk_create(
        Invocation(tenant=world.acme.tenant, agent=world.acme.agent, task_id=task, call_id="refund_1",
                   tool_name="refund_payment", status="ok", latency_ms=3.0)
        for task in DEMO_TASKS
    )

    page = superuser.get(reverse("admin:audit_invocation_changelist")).content.decode()

    for task in DEMO_TASKS:
        assert f">{task}</span>" in page


def test_a_capability_reason_reads_as_a_sentence(world, superuser):
    page = superuser.get(
        reverse("admin:capabilities_capabilityrequest_change", args=[world.acme.capability.pk])
    ).content.decode()

    assert "missing: the agent has no tool of that name, or asked for one with request_capability" in page
    assert "or asked for<" not in page


def test_a_hand_made_version_shows_no_imported_from_section(world, superuser):
    imported = ToolVersionFactory(tool=world.acme.tool, number=2,
                                  source={"kind": "openapi", "key": "listOrders", "digest": "d"})

    hand_made = superuser.get(reverse("admin:catalog_toolversion_change", args=[world.acme.version.pk]))
    from_import = superuser.get(reverse("admin:catalog_toolversion_change", args=[imported.pk]))

    assert "Imported from" not in hand_made.content.decode()
    assert "Imported from" in from_import.content.decode() and "listOrders" in from_import.content.decode()


def test_choice_labels_spell_acronyms_and_words_as_people_do(world, superuser):
    page = superuser.get(reverse("admin:catalog_toolversion_changelist")).content.decode()

    for label in (">HTTP<", ">MCP<", ">Python<", ">Read-only<", ">Recomputable<", ">Write<"):
        assert label in page
    for clumsy in (">Http<", ">Mcp<", ">Readonly<"):
        assert clumsy not in page


def test_no_help_text_shows_markdown_backticks():
    quoted = [
        f"{model.__name__}.{field.name}"
        for model in apps.get_models()
        for field in model._meta.get_fields()
        if "`" in str(getattr(field, "help_text", ""))
    ]

    assert quoted == []


def test_the_openapi_import_form_is_laid_out_like_the_admins_forms(world, superuser):
    page = superuser.get(reverse("admin:imports_openapi")).content.decode()

    assert "admin/css/forms.css" in page
    assert '<div class="flex-container">' in page
    assert 'class="vTextField"' in page and 'class="vURLField"' in page


def test_the_try_it_console_prefills_only_values_the_schema_accepts(world, superuser):
    version = ToolVersionFactory(tool=world.acme.tool, number=2, parameters={
        "type": "object", "additionalProperties": False,
        "required": ["order_id", "reference", "status", "note"],
        "properties": {
            "order_id": {"type": "string", "pattern": "^ORD-\\d{6}$", "description": "The order."},
            "reference": {"type": "string", "pattern": "^R\\d+$", "examples": ["R12"], "description": "Ref."},
            "status": {"type": "string", "enum": ["paid", "all"], "description": "Which."},
            "note": {"type": "string", "maxLength": 3, "description": "Short."},
        },
    })

    page = superuser.get(reverse("admin:catalog_toolversion_try", args=[version.pk]))

    prefilled = json.loads(page.context["form"].initial["arguments"])
    assert prefilled == {"reference": "R12", "status": "paid"}


def test_the_demos_order_refunds_draft_shows_why_it_is_unsafe(superuser):
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    draft = ToolVersion.objects.get(tool__name="list_order_refunds")

    page = superuser.get(reverse("admin:catalog_toolversion_change", args=[draft.pk])).content.decode()

    assert "No findings" not in page
    assert "session-unscoped-path" in page
    assert "any order_id" in page


@pytest.mark.parametrize("model", ["ledger_ledgerentry", "audit_invocation"])
def test_the_ledger_and_invocation_searches_say_they_take_whole_ids(world, superuser, model):
    url = reverse(f"admin:{model}_changelist")

    whole = superuser.get(url, {"q": "acme-task"}).content.decode()
    word = superuser.get(url, {"q": "task"}).content.decode()

    assert "not a word of one" in whole
    assert "call_1" in whole.split('id="result_list"')[1]
    assert 'id="result_list"' not in word  # a word of an id matches nothing, and the box said so
