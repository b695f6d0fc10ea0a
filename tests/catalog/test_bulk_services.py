"""Many new tools at once (catalog.bulk): refused as tool_save and version_create_draft
refuse them, with nothing written, and the failing one's index given."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from apps.audit.models import AuditEvent
from apps.catalog.bulk import tools_create_with_drafts
from apps.catalog.models import Tool
from tests.factories import TenantFactory, ToolFactory

pytestmark = pytest.mark.django_db

CONTENT = {"description": "Reads an item.", "parameters": {"type": "object", "properties": {}},
           "side_effect": "readonly", "executor": "http",
           "executor_config": {"method": "GET", "path": "/items", "url": "https://items.example.com"}}


def test_new_tools_get_their_drafts_and_audit_events():
    tenant = TenantFactory()

    versions = tools_create_with_drafts(tenant_id=tenant.pk, actor="test", new=[
        ("get_item", "Get", CONTENT), ("list_items", "List", CONTENT),
    ])

    assert [(v.tool.name, v.number, v.status) for v in versions] == [
        ("get_item", 1, "draft"), ("list_items", 1, "draft")]
    assert AuditEvent.objects.filter(action="tool.create").count() == 2
    drafted = AuditEvent.objects.filter(action="tool_version.create_draft", target_id=str(versions[1].pk))
    assert drafted.exists()


@pytest.mark.parametrize(("new", "index", "said"), [
    ([("get_item", "", CONTENT), ("shared_tool", "", CONTENT)], 1,
     "shared_tool: The shared catalog already has"),
    ([("get_item", "", CONTENT), ("get item", "", CONTENT)], 1, "get item:"),
    ([("get_item", "", {**CONTENT, "parameters": {"type": "array"}})], 0, "get_item:"),
])
def test_a_name_taken_or_a_bad_draft_refuses_all_naming_which(new, index, said):
    tenant = TenantFactory()
    ToolFactory(name="shared_tool", tenant=None)

    with pytest.raises(ValidationError) as refused:
        tools_create_with_drafts(tenant_id=tenant.pk, actor="test", new=new)

    assert refused.value.params == {"index": index} and said in " ".join(refused.value.messages)
    assert not Tool.objects.filter(tenant=tenant).exists() and not AuditEvent.objects.exists()
