"""Importing OpenAPI documents: the classic Petstore (3.0), an orders API in 3.1, malformed
documents, and re-importing a changed document."""

from __future__ import annotations

import copy
import hashlib
import io
import json
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from apps.audit.models import AuditEvent
from apps.catalog.models import Tool, ToolVersion
from apps.catalog.services import tool_save, version_save_draft
from apps.common.schemas.patterns import FORMAT_CHECKER, ToolSchemaValidator
from apps.imports.errors import ImportRefused
from apps.imports.openapi import OpenAPIError
from apps.imports.openapi_services import openapi_import
from apps.tenancy.models import Grant
from apps.upstreams.models import Upstream
from tests.factories import AgentFactory, CredentialFactory, TenantFactory

pytestmark = pytest.mark.django_db

DOCUMENTS = Path(__file__).parent / "documents"
PETSTORE = DOCUMENTS / "petstore.yaml"
ORDERS = DOCUMENTS / "orders-3.1.yaml"


@pytest.fixture
def tenant():
    return TenantFactory(slug="acme")


def _import(tenant, document, **options):
    text = document.read_bytes() if isinstance(document, Path) else json.dumps(document)
    return openapi_import(tenant=tenant, document_text=text, actor="curator", **options)


def _version(name: str) -> ToolVersion:
    return ToolVersion.objects.filter(tool__name=name).order_by("-number").first()


def _accepts(version: ToolVersion, arguments: dict) -> bool:
    validator = ToolSchemaValidator(version.parameters, format_checker=FORMAT_CHECKER)
    return validator.is_valid(arguments)


def test_the_petstore_becomes_one_draft_per_operation(tenant):
    report = _import(tenant, PETSTORE, upstream="petstore")

    assert [(r.key, r.outcome, r.tool) for r in report.results] == [
        ("findPets", "new", "find_pets"),
        ("addPet", "new", "add_pet"),
        ("find pet by id", "new", "find_pet_by_id"),
        ("deletePet", "new", "delete_pet"),
    ]
    assert report.base_url == "https://petstore.swagger.io/v2"
    assert set(Tool.objects.filter(tenant=tenant).values_list("name", flat=True)) == {
        "find_pets", "add_pet", "find_pet_by_id", "delete_pet"
    }
    assert set(ToolVersion.objects.values_list("status", flat=True)) == {"draft"}
    find = _version("find_pets")
    assert (find.side_effect, find.executor, find.strict) == ("readonly", "http", False)
    assert find.executor_config == {"upstream": "petstore", "method": "GET", "path": "/pets",
                                    "query": ["tags", "limit"]}
    assert find.description == "Returns all pets from the system that the user has access to"
    # optional query parameters stay optional, and admit no null the document does not
    assert find.parameters["required"] == []
    assert find.parameters["properties"]["limit"]["type"] == "integer"
    assert _accepts(find, {"tags": ["dog"]})
    assert not _accepts(find, {"limit": None})
    assert not _accepts(find, {"limit": 5, "colour": "red"})
    # the body of addPet, from NewPet by $ref
    add = _version("add_pet")
    assert add.side_effect == "write"
    assert add.executor_config == {"upstream": "petstore", "method": "POST", "path": "/pets",
                                   "body": ["name", "tag"], "idempotency_header": "Idempotency-Key"}
    assert add.parameters["properties"]["name"] == {"type": "string"}
    delete = _version("delete_pet")
    assert delete.executor_config["path"] == "/pets/{id}"
    assert delete.parameters["properties"]["id"] == {"description": "ID of pet to delete", "type": "integer"}
    # what it was made from, kept on the version
    assert find.source["key"] == "findPets" and find.source["digest"].startswith("sha256:")
    assert find.source["operation"]["path"] == "/pets"
    # lint findings come with each draft, and the petstore has no errors
    by_tool = {r.tool: r for r in report.results}
    codes = {f.code for f in by_tool["add_pet"].findings}
    assert codes >= {"undescribed-parameter", "write-without-reconcile"}
    assert all(r.lint_errors == 0 for r in report.results)
    assert AuditEvent.objects.filter(action="openapi.import", tenant_id=tenant.pk).count() == 1


def test_a_31_document_keeps_refs_oneof_nulls_enums_and_path_parameters(tenant):
    report = _import(tenant, ORDERS, upstream="orders")

    outcomes = {r.key: r.summary for r in report.results}
    assert outcomes == {
        "listOrders": "new", "createOrder": "new", "getOrder": "new", "updateOrderStatus": "new",
        "uploadInvoice": "skipped: its multipart body needs the file field file; ToolHub does not upload "
        "files.",
    }
    assert report.base_url == "https://api.example.com/v2"
    listing = _version("list_orders")
    properties = listing.parameters["properties"]
    # the API key never becomes an argument; a listed header does, snake_cased
    assert set(properties) == {"status", "placed_after", "limit", "x_request_channel"}
    assert listing.executor_config["headers"] == {"X-Request-Channel": "x_request_channel"}
    assert properties["status"]["enum"] == ["pending", "paid", "shipped", "cancelled"]
    assert properties["x_request_channel"]["enum"] == ["web", "phone"]
    assert properties["placed_after"]["format"] == "date"
    assert _accepts(listing, {"status": "paid", "placed_after": "2026-01-31", "limit": 20,
                              "x_request_channel": "web"})
    assert not _accepts(listing, {"status": "lost", "placed_after": "31/01/2026", "limit": 20,
                                  "x_request_channel": "web"})

    get = _version("get_order")
    assert get.executor_config == {"upstream": "orders", "method": "GET", "path": "/orders/{order_id}",
                                   "query": ["expand"]}
    assert get.parameters["properties"]["order_id"]["pattern"] == "^ord_[a-z0-9]{12}$"

    create = _version("create_order")
    assert create.executor_config["body"] == ["items", "shipping_address", "payment", "note"]
    assert create.executor_config["idempotency_header"] == "Idempotency-Key"
    # the members whose null the document accepts: null is sent for them only
    assert create.executor_config["send_null"] == ["/shipping_address", "/note"]
    assert "id" not in create.parameters["properties"]  # read-only: the server's to set
    order = {"items": [{"sku": "A1", "quantity": 2}], "shipping_address": None,
             "payment": {"method": "bank", "iban": "DE02"}, "note": None}
    assert _accepts(create, order)
    assert not _accepts(create, {**order, "payment": {"method": "card", "iban": "DE02"}})
    address = {"line1": "Main St 1", "line2": None, "country": "DE"}
    assert _accepts(create, {**order, "shipping_address": address})

    update = _version("update_order_status")
    assert update.executor_config["method"] == "PATCH" and update.side_effect == "write"
    assert update.parameters["properties"]["reason"]["enum"] == ["customer_request", "fraud", None]
    assert all(r.lint_errors == 0 for r in report.results if r.version)


def test_nullable_of_openapi_30_admits_null_and_keeps_the_enum(tenant):
    document = {
        "openapi": "3.0.3", "info": {"title": "Tickets", "version": "1"},
        "paths": {"/tickets": {"post": {
            "operationId": "openTicket",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["priority", "due"],
                "properties": {
                    "priority": {"type": "string", "enum": ["low", "high"], "nullable": True},
                    "due": {"type": "string", "format": "date-time"},
                    "count": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
                },
            }}}},
        }}},
    }

    _import(tenant, document, upstream="tickets", base_url="https://tickets.example.com")

    properties = _version("open_ticket").parameters["properties"]
    assert properties["priority"] == {"type": ["string", "null"], "enum": ["low", "high", None]}
    assert properties["due"]["pattern"].startswith("^")
    assert properties["count"] == {"type": "integer", "exclusiveMinimum": 0}
    assert _version("open_ticket").executor_config["send_null"] == ["/priority"]


def test_a_name_taken_in_the_tenant_ends_in_a_digest_of_the_operation_and_is_reported(tenant):
    tool_save(tool=Tool(name="find_pets", tenant=tenant), actor="curator")

    report = _import(tenant, PETSTORE, upstream="petstore", operation_ids=["findPets"])

    # sha256("findPets") starts cbc663: the same name at every import of the document
    assert [r.tool for r in report.results] == ["find_pets_cbc663"]
    assert report.results[0].summary == "new; named find_pets_cbc663: another tool is already named find_pets"


def test_an_operation_named_like_a_built_in_tool_gets_another_name(tenant):
    document = {
        "openapi": "3.1.0", "info": {"title": "Wishes", "version": "1"},
        "paths": {"/wishes": {"post": {
            "operationId": "request_capability", "summary": "Files a wish.",
            "responses": {"201": {"description": "Filed."}},
        }}},
    }

    report = _import(tenant, document, upstream="wishes", base_url="https://wishes.example.com")

    [result] = report.results
    assert result.tool == "request_capability_" + hashlib.sha256(b"request_capability").hexdigest()[:6]
    assert "request_capability is the name of a tool ToolHub itself offers every agent" in result.summary
    assert not Tool.objects.filter(name="request_capability").exists()


def test_long_names_are_cut_with_a_digest_and_never_collide_into_numbers(tenant):
    # given: two operationIds of 70 characters alike in their first 64, and two operations
    # whose snake_case names are the same
    long = "retrieve_the_upcoming_invoice_line_items_for_the_customer_subscription"
    answers = {"200": {"description": "ok"}}
    document = {
        "openapi": "3.1.0", "info": {"title": "Billing", "version": "1"},
        "paths": {
            "/a": {"get": {"operationId": f"{long}_a", "responses": answers}},
            "/b": {"get": {"operationId": f"{long}_b", "responses": answers}},
            "/c": {"get": {"operationId": "listItems", "responses": answers}},
            "/d": {"get": {"operationId": "list_items", "responses": answers}},
        },
    }

    # when: imported into two tenants
    first = _import(tenant, document, upstream="billing", base_url="https://billing.example.com")
    other = _import(TenantFactory(slug="other"), document, upstream="billing",
                    base_url="https://billing.example.com")

    # then: readable, at most 64, each change reported, the same in both tenants
    names = [r.tool for r in first.results]
    assert names == [r.tool for r in other.results]
    assert len(set(names)) == 4 and all(len(n) <= 64 for n in names)
    assert names[0].startswith(long[:50]) and names[0] != names[1]
    assert names[2] == "list_items" and names[3].startswith("list_items_")
    assert not any(n.endswith(("_2", "_3")) for n in names)
    assert "has 72 characters, a tool name at most 64" in first.results[0].summary
    assert "another tool is already named list_items" in first.results[3].summary
    assert first.results[2].summary == "new"


BROKEN = {
    "Swagger 2.0": (
        lambda d: (d.pop("openapi"), d.update(swagger="2.0")),
        "/openapi: ToolHub imports OpenAPI 3.0 and 3.1, this is swagger 2.0",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_malformed_document_is_refused_naming_where_and_nothing_is_written(tenant, case):
    document = yaml.safe_load(PETSTORE.read_text())
    breakage, message = BROKEN[case]
    breakage(document)

    with pytest.raises(OpenAPIError) as refused:
        _import(tenant, document, upstream="petstore")

    assert message in str(refused.value)
    assert not Tool.objects.exists() and not ToolVersion.objects.exists()
    assert not AuditEvent.objects.exists()


def test_text_that_is_neither_json_nor_yaml_is_refused_with_its_line(tenant):
    with pytest.raises(OpenAPIError, match="line 4: neither JSON nor YAML"):
        openapi_import(tenant=tenant, document_text=b"openapi: 3.0.0\npaths:\n  - [unclosed\n",
                       upstream="x", actor="curator")


def test_a_failed_publish_leaves_nothing_imported(tenant):
    document = yaml.safe_load(PETSTORE.read_text())
    # whose pet it is, taken from the model: lint refuses it until bound to the session
    document["components"]["schemas"]["NewPet"]["properties"]["owner_id"] = {"type": "string"}

    with pytest.raises(ImportRefused, match=r"Operation addPet \(add_pet\) cannot be published.*owner_id"):
        _import(tenant, document, upstream="petstore", publish=True)

    assert not Tool.objects.exists() and not AuditEvent.objects.exists()


def test_reimporting_shows_what_changed_and_drafts_only_the_changed_operations(tenant):
    _import(tenant, PETSTORE, upstream="petstore")
    # a curator adds a response pointer to find_pets' draft: a re-import keeps it
    find = _version("find_pets")
    find.executor_config = {**find.executor_config, "response_pointer": "/items"}
    version_save_draft(version=find, actor="curator")
    changed = yaml.safe_load(PETSTORE.read_text())
    changed["paths"]["/pets"]["get"]["description"] = "Returns the pets, at most 50. Do not use it to count."
    changed["paths"]["/pets"]["get"]["responses"]["200"]["description"] = "only the answer changed"
    changed["components"]["schemas"]["NewPet"]["properties"]["tag"]["enum"] = ["dog", "cat"]
    changed["paths"]["/pets/{id}"]["put"] = {
        "operationId": "replacePet", "parameters": [{"name": "id", "in": "path", "required": True,
                                                     "schema": {"type": "integer"}}],
        "responses": {"200": {"description": "Replaced."}},
    }

    report = _import(tenant, changed, upstream="petstore")

    # NewPet is part of Pet, the answer of addPet and of find pet by id: their output schemas changed
    assert {r.key: r.summary for r in report.results} == {
        "findPets": "changed: description",
        "addPet": "changed: parameters, output_schema",
        "find pet by id": "changed: output_schema",
        "deletePet": "unchanged",
        "replacePet": "new",
    }
    assert list(Tool.objects.get(name="delete_pet").versions.values_list("number", flat=True)) == [1]
    assert _version("find_pet_by_id").output_schema["properties"]["tag"]["enum"] == ["dog", "cat"]
    find_v2 = _version("find_pets")
    assert find_v2.number == 2 and find_v2.status == "draft"
    assert find_v2.description.startswith("Returns the pets, at most 50.")
    assert find_v2.executor_config["response_pointer"] == "/items"
    assert find_v2.source["digest"] != find.source["digest"]
    assert _version("add_pet").parameters["properties"]["tag"]["enum"] == ["dog", "cat"]

    # the same document once more: nothing to do, nothing written
    events = AuditEvent.objects.count()
    again = _import(tenant, changed, upstream="petstore")
    assert {r.outcome for r in again.results} == {"unchanged"}
    assert ToolVersion.objects.count() == 4 + 3 + 1
    assert AuditEvent.objects.count() == events


def test_the_command_imports_publishes_and_grants_chosen_operations(tenant):
    AgentFactory(tenant=tenant, name="support-bot")
    out = io.StringIO()

    call_command("import_openapi", str(PETSTORE), "--tenant", "acme", "--upstream", "petstore",
                 "--operations", "findPets,find pet by id", "--publish", "--grant", "support-bot", stdout=out)

    assert "findPets: new → find_pets v1 (published)" in out.getvalue()
    assert set(ToolVersion.objects.values_list("tool__name", "status")) == {
        ("find_pets", "published"), ("find_pet_by_id", "published")
    }
    assert set(Grant.objects.values_list("agent__name", "tool__name")) == {
        ("support-bot", "find_pets"), ("support-bot", "find_pet_by_id")
    }


@pytest.mark.parametrize(("arguments", "message"), [
    (["--operations", "sellPet"], "The document has no operation sellPet; its operations are: findPets"),
    (["--grant", "nobody"], "Tenant acme has no agent 'nobody'"),
])
def test_the_command_refuses_clearly_and_writes_nothing(tenant, arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("import_openapi", str(PETSTORE), "--tenant", "acme", "--upstream", "petstore",
                     *arguments)

    assert not Tool.objects.exists()


def test_a_document_by_url_is_fetched_through_the_egress_policy(tenant, live_server, settings):
    url = f"{live_server.url}/demo/openapi.json"

    call_command("import_openapi", url, "--tenant", "acme", "--upstream", "demo-payments",
                 stdout=io.StringIO())
    assert Tool.objects.filter(tenant=tenant, name="list_order_refunds").exists()
    tools = Tool.objects.count()

    settings.TOOLHUB_EGRESS_ALLOW = []
    with pytest.raises(CommandError, match="The egress policy refuses .* loopback"):
        call_command("import_openapi", url, "--tenant", "acme", "--upstream", "other")
    assert Tool.objects.count() == tools


def test_the_document_is_data_a_changed_source_is_frozen_with_the_version(tenant):
    report = _import(tenant, PETSTORE, upstream="petstore", operation_ids=["findPets"], publish=True)
    version = report.results[0].version
    tampered = copy.deepcopy(version.source)
    tampered["operation"]["path"] = "/elsewhere"
    version.source = tampered

    with pytest.raises(Exception, match="cannot change"):
        version.save()


def test_a_missing_upstream_is_made_from_the_documents_server_with_the_named_credential(tenant):
    # given: the tenant stored the API's key, but has no upstream yet
    credential = CredentialFactory(tenant=tenant, name="petstore-key", value="pk-0123456789abcdef",
                                   actor="curator")

    # when
    _import(tenant, PETSTORE, upstream="petstore", credential="petstore-key")
    _import(tenant, PETSTORE, upstream="petstore", credential="petstore-key")

    # then: one upstream of the tenant, at the document's first server, with that credential
    upstream = Upstream.objects.get(name="petstore")
    assert (upstream.tenant, upstream.base_url, upstream.credential) == (
        tenant, "https://petstore.swagger.io/v2", credential
    )


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"credential": "no-such-key"}, "has no credential 'no-such-key'"),
        ({"base_url": "not a url"}, "cannot be made"),
    ],
)
def test_an_upstream_that_cannot_be_made_refuses_the_import_and_writes_nothing(tenant, options, said):
    with pytest.raises(ImportRefused, match=said):
        _import(tenant, PETSTORE, upstream="petstore", **options)

    assert not Upstream.objects.exists() and not Tool.objects.filter(tenant=tenant).exists()


def test_a_document_without_a_server_needs_a_base_url(tenant):
    document = yaml.safe_load(PETSTORE.read_text())
    del document["servers"]

    with pytest.raises(ImportRefused, match="names no server"):
        _import(tenant, document, upstream="petstore")


def test_an_operations_json_object_answer_becomes_its_output_schema(tenant):
    _import(tenant, PETSTORE, upstream="petstore")

    by_id = _version("find_pet_by_id").output_schema

    # Pet, its $ref and allOf expanded: what the 200 answer holds, to check results against
    assert by_id["type"] == "object"
    assert set(by_id["properties"]) == {"id", "name", "tag"} and set(by_id["required"]) == {"id", "name"}
    # an array answer is no MCP outputSchema; a 204 and a default error answer have none to give
    assert _version("find_pets").output_schema == {}
    assert _version("delete_pet").output_schema == {}


def test_an_answer_schema_that_cannot_be_expanded_is_left_out_not_the_operation(tenant):
    document = yaml.safe_load(PETSTORE.read_text())
    answer = document["paths"]["/pets/{id}"]["get"]["responses"]["200"]["content"]["application/json"]
    answer["schema"] = {"$ref": "#/components/schemas/Nowhere"}

    report = _import(tenant, document, upstream="petstore")

    assert {r.key: r.outcome for r in report.results}["find pet by id"] == "new"
    assert _version("find_pet_by_id").output_schema == {}
