"""Importing the tools of an MCP server: the SDK's own server on loopback is listed, its tools
become drafts of the `mcp` executor, a re-import of an unchanged server makes nothing, and an
imported, published and granted tool answers through REST invoke."""

from __future__ import annotations

import pytest
from django.core.management import CommandError
from rest_framework.test import APIClient

from apps.audit.models import AuditEvent
from apps.catalog.lint import lint_tool, with_side_effect_confirmed
from apps.catalog.models import ToolVersion
from apps.catalog.selectors import lint_definition
from apps.catalog.services import version_publish
from apps.imports.limits import ImportLimits
from apps.imports.mcp_tools import definition_problem, draft_of_tool
from apps.tenancy.services import agent_key_issue
from tests.factories import SHIPPING_KEY
from tests.gateway.conftest import invoke
from tests.imports.conftest import import_mcp

pytestmark = pytest.mark.django_db


def test_each_listed_tool_becomes_a_draft_calling_it(agent, shipping):
    # when
    printed = import_mcp()

    # then
    versions = {v.tool.name: v for v in ToolVersion.objects.select_related("tool")}
    assert set(versions) == {"track_shipment", "list_carriers", "schedule_pickup", "pickup_status",
                             "vague_status", "cancel_shipment"}
    track = versions["track_shipment"]
    assert (track.status, track.executor, track.strict) == ("draft", "mcp", False)
    assert track.executor_config == {"upstream": "shipping", "tool": "track_shipment"}
    assert track.description == "Where a shipment is."
    assert track.parameters["properties"]["shipment_id"]["type"] == "string"
    assert track.parameters["required"] == ["shipment_id"]
    assert track.parameters["additionalProperties"] is False
    assert track.source["kind"] == "mcp" and track.source["digest"].startswith("sha256:")
    assert track.source["tool"]["name"] == "track_shipment"
    assert track.source["tool"]["inputSchema"]["properties"]["shipment_id"]["type"] == "string"
    assert "track_shipment: new → track_shipment v1 (draft)" in printed
    assert set(shipping.authorizations) == {f"Bearer {SHIPPING_KEY}"}
    assert AuditEvent.objects.filter(action="mcp.import").count() == 1


def test_a_writes_idempotency_key_input_is_filled_by_toolhub_not_the_model(agent):
    # when
    import_mcp("--tools", "schedule_pickup,pickup_status")

    # then: the write's key argument left the model's schema and is named in the config
    pickup = ToolVersion.objects.get(tool__name="schedule_pickup")
    assert pickup.side_effect == "write"
    assert pickup.executor_config == {
        "upstream": "shipping", "tool": "schedule_pickup", "idempotency_argument": "idempotency_key"
    }
    assert list(pickup.parameters["properties"]) == ["shipment_id"]
    assert pickup.parameters["required"] == ["shipment_id"]
    # a readonly tool's argument of that name is the model's to fill
    status = ToolVersion.objects.get(tool__name="pickup_status")
    assert (status.side_effect, status.executor_config.get("idempotency_argument")) == ("readonly", None)
    assert list(status.parameters["properties"]) == ["idempotency_key"]


def test_a_reimport_of_an_unchanged_server_makes_nothing(agent):
    # given
    import_mcp()

    # when
    printed = import_mcp()

    # then
    assert ToolVersion.objects.count() == 6
    assert "track_shipment: unchanged" in printed
    assert AuditEvent.objects.filter(action="mcp.import").count() == 1


def test_a_changed_tool_gets_a_new_draft(agent):
    # given: the server described the tool differently when it was imported
    import_mcp("--tools", "track_shipment")
    first = ToolVersion.objects.get()
    first.source = {**first.source, "digest": "sha256:old",
                    "tool": {**first.source["tool"], "description": "Where a parcel is."}}
    first.save()

    # when
    printed = import_mcp("--tools", "track_shipment")

    # then
    second = ToolVersion.objects.get(number=2)
    assert "track_shipment: changed: description" in printed
    assert (second.status, second.description) == ("draft", "Where a shipment is.")


def test_an_imported_published_granted_tool_answers_through_invoke(agent):
    # when
    import_mcp("--tools", "track_shipment", "--publish", "--grant", "helper")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=agent).secret}")
    body = invoke(api, "track_shipment", {"shipment_id": "s-1"}).json()

    # then
    assert body["status"] == "ok", body
    assert body["data"] == {"shipment_id": "s-1", "status": "in transit"}


@pytest.mark.parametrize(("annotations", "side_effect"), [
    ({"readOnlyHint": True}, "readonly"),
    ({"readOnlyHint": False, "destructiveHint": True}, "write"),
    ({"idempotentHint": True}, "write"),
    ({}, "write"),
])
def test_the_side_effect_is_suggested_from_the_annotations(annotations, side_effect):
    definition = {"name": "getWeather", "description": "The weather.", "annotations": annotations,
                  "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}

    draft = draft_of_tool(definition, upstream="weather")

    assert draft.side_effect == side_effect
    assert draft.name == "get_weather"
    # an optional argument stays optional, and null is not one of its values
    assert "required" not in draft.parameters
    assert draft.parameters["properties"]["city"]["type"] == "string"


def test_a_tool_the_server_lists_no_more_is_refused_with_the_ones_it_lists(agent):
    with pytest.raises(CommandError, match="lists no tool track_parcel; it lists: track_shipment"):
        import_mcp("--tools", "track_parcel")

    assert not ToolVersion.objects.exists()


def test_tools_toolhub_cannot_store_or_expand_are_skipped_with_the_reason(agent, shipping):
    # given
    shipping.list_as_written("recurse", {"type": "object", "properties": {"n": {"$ref": "#"}}})
    shipping.list_as_written("bad\x00name", {"type": "object", "properties": {}})
    schemas: dict = {"S0": {"type": "string"}}
    for n in range(1, 13):
        below = {"$ref": f"#/$defs/S{n - 1}"}
        schemas[f"S{n}"] = {"type": "object", "properties": {"l": below, "r": below}}
    shipping.list_as_written("bomb", {"type": "object", "properties": {"x": {"$ref": "#/$defs/S12"}},
                                      "$defs": schemas})

    # when
    printed = import_mcp()

    # then: the others imported, these three skipped saying why, nothing stored of them
    assert "recurse: skipped: its schema is recursive (/properties/n refers to" in printed
    assert "bad\\u0000name: skipped: its definition cannot be stored: at /name, contains a NUL" in printed
    assert "bomb: skipped: its inputSchema at /properties/x" in printed
    assert "TOOLHUB_IMPORT_MAX_SCHEMA_NODES" in printed
    names = set(ToolVersion.objects.values_list("tool__name", flat=True))
    assert "track_shipment" in names and not names & {"recurse", "bad_name", "bomb"}


def test_a_definition_nested_past_the_limit_is_not_importable_naming_the_setting():
    schema: dict = {"type": "string"}
    for _ in range(40):
        schema = {"type": "object", "properties": {"n": schema}}

    problem = definition_problem({"name": "deep", "inputSchema": schema}, limits=ImportLimits.from_settings())

    assert problem.startswith("its definition at /inputSchema/properties/n/")
    assert problem.endswith("is nested deeper than 64 levels (TOOLHUB_IMPORT_MAX_DEPTH).")


def test_more_tools_than_the_limit_are_refused_naming_it(agent, settings):
    settings.TOOLHUB_IMPORT_MAX_OPERATIONS = 2

    refusal = r"6 tools are chosen.*at most 2 \(TOOLHUB_IMPORT_MAX_OPERATIONS\)"
    with pytest.raises(CommandError, match=refusal):
        import_mcp()

    assert not ToolVersion.objects.exists()


def test_the_servers_output_schemas_and_annotations_come_with_the_drafts(agent, shipping):
    # when
    import_mcp()

    # then
    versions = {v.tool.name: v for v in ToolVersion.objects.select_related("tool")}
    track = versions["track_shipment"]
    assert track.output_schema["type"] == "object"
    assert set(track.output_schema["properties"]) == {"shipment_id", "status"}
    assert track.annotations == {"readOnlyHint": True}
    assert versions["list_carriers"].output_schema == {}  # the server declared none
    assert versions["schedule_pickup"].annotations == {
        "readOnlyHint": False, "destructiveHint": False, "idempotentHint": True
    }


def test_a_tool_without_hints_is_a_write_the_curator_is_asked_to_confirm(agent, shipping):
    import_mcp()
    versions = {v.tool.name: v for v in ToolVersion.objects.select_related("tool")}

    unhinted = _side_effect_findings(versions["cancel_shipment"])
    hinted = _side_effect_findings(versions["schedule_pickup"])

    assert versions["cancel_shipment"].side_effect == "write"
    assert [(f.severity, f.field) for f in unhinted] == [("warning", "side_effect")]
    assert "gave no readOnlyHint or destructiveHint" in unhinted[0].why
    assert hinted == []
    # a warning: the draft still publishes; once the curator saved the side effect, not asked again
    version_publish(version=versions["cancel_shipment"], actor="curator")
    confirmed = versions["cancel_shipment"]
    confirmed.source = with_side_effect_confirmed(confirmed.source, "write")
    assert _side_effect_findings(confirmed) == []


def _side_effect_findings(version):
    return [f for f in lint_tool(lint_definition(version)) if f.code == "side-effect-unconfirmed"]


def test_output_schemas_are_kept_only_as_object_schemas_and_annotations_only_as_mcps():
    base = {"name": "getWeather", "description": "The weather.",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    referenced = {"$defs": {"W": {"type": "object", "properties": {"temp": {"type": "number"}}}},
                  "$ref": "#/$defs/W"}

    object_draft = draft_of_tool({**base, "outputSchema": referenced}, upstream="weather")
    array_draft = draft_of_tool({**base, "outputSchema": {"type": "array"}}, upstream="weather")
    odd = draft_of_tool({**base, "annotations": {"readOnlyHint": "yes", "title": " Weather ",
                                                 "runAs": "root"}}, upstream="weather")

    assert object_draft.output_schema["type"] == "object"
    assert object_draft.output_schema["properties"]["temp"]["type"] == "number"
    assert array_draft.output_schema == {}
    assert (odd.annotations, odd.side_effect) == ({"title": "Weather"}, "write")
