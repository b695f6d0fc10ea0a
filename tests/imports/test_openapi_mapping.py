"""How an imported operation's arguments go on the wire: parameters with their style and
wire names, bodies by media type, optional arguments left optional and the nulls the
document accepts (issue 20). One small document of our own per API's way of writing it:
Stripe's forms, GitHub's optional JSON bodies, Twilio's filter names, and odd requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apps.catalog.models import ToolVersion
from apps.common.schemas.patterns import FORMAT_CHECKER, ToolSchemaValidator
from apps.imports.drafts import Draft, draft_of
from apps.imports.errors import Unsupported
from apps.imports.openapi import Operation, document_operations, parse_document
from apps.imports.openapi_services import openapi_import
from tests.factories import TenantFactory

DOCUMENTS = Path(__file__).parent / "documents"
FORM = "application/x-www-form-urlencoded"
EXPLODED_DEEP_OBJECT = {"style": "deepObject", "explode": True}
SESSION_COOKIE = "a session or credential cookie is never an argument"


def _operation(document: str, key: str) -> Operation | tuple[str, str, str]:
    parsed = parse_document((DOCUMENTS / document).read_bytes())
    [operation] = document_operations(parsed, only=[key])
    return operation


def _draft(document: str, key: str) -> Draft:
    operation = _operation(document, key)
    assert isinstance(operation, Operation), operation
    return draft_of(operation, upstream="api")


def _skipped(document: str, key: str) -> str:
    operation = _operation(document, key)
    assert isinstance(operation, Operation)
    with pytest.raises(Unsupported) as skipped:
        draft_of(operation, upstream="api")
    return str(skipped.value)


def _accepts(draft: Draft, arguments: dict[str, Any]) -> bool:
    return ToolSchemaValidator(draft.parameters, format_checker=FORMAT_CHECKER).is_valid(arguments)


# --- Stripe: form bodies ---------------------------------------------------------------------


def test_an_optional_form_body_becomes_optional_arguments_sent_as_a_form():
    draft = _draft("stripe-like.yaml", "PostCustomers")

    assert draft.executor_config == {
        "upstream": "api", "method": "POST", "path": "/v1/customers",
        "body_media_type": FORM,
        "body": ["email", "name", "metadata", "expand"],
        # what makes email=…&name=…&metadata[order_id]=ORD-1 and expand[]=…
        "body_encoding": {"expand": EXPLODED_DEEP_OBJECT, "metadata": EXPLODED_DEEP_OBJECT},
        "idempotency_header": "Idempotency-Key",
    }
    assert draft.parameters["required"] == []
    assert draft.parameters["additionalProperties"] is False
    assert _accepts(draft, {"email": "jenny@example.com", "name": "Jenny", "metadata": {"order_id": "ORD-1"}})
    assert _accepts(draft, {})
    # optional is optional, not "null for not given": the document admits no null
    assert not _accepts(draft, {"email": None})
    assert not _accepts(draft, {"email": "jenny@example.com", "phone": "+1555"})


def test_a_get_with_an_empty_form_body_sends_none_and_deep_object_queries_keep_their_style():
    draft = _draft("stripe-like.yaml", "GetCustomers")

    assert draft.executor_config == {
        "upstream": "api", "method": "GET", "path": "/v1/customers",
        "query": ["created", "expand", "limit"],
        # created[gte]=…, expand[]=…; limit is a scalar, which needs no rule
        "serialization": {"created": EXPLODED_DEEP_OBJECT, "expand": EXPLODED_DEEP_OBJECT},
    }
    assert set(draft.parameters["properties"]) == {"created", "expand", "limit"}


# --- GitHub: optional JSON bodies, nulls that clear a field ----------------------------------


def test_a_patch_keeps_its_fields_optional_and_sends_null_only_where_the_document_allows_it():
    draft = _draft("github-like.yaml", "issues/update")

    assert draft.parameters["required"] == ["owner", "repo", "issue_number"]
    assert draft.executor_config["body"] == ["title", "state", "milestone", "labels"]
    assert draft.executor_config["send_null"] == ["/milestone"]
    path = {"owner": "octo", "repo": "hello", "issue_number": 7}
    assert _accepts(draft, {**path, "state": "closed"})
    assert _accepts(draft, {**path, "milestone": None})
    assert not _accepts(draft, {**path, "title": None})
    assert not _accepts(draft, {**path, "state": None})
    assert not _accepts(draft, {**path, "labels": None})


def test_a_path_parameter_that_may_hold_slashes_says_so():
    draft = _draft("github-like.yaml", "repos/get-content")

    assert draft.executor_config["serialization"] == {"path": {"multi_segment": True}}
    assert draft.executor_config["query"] == ["ref"]


@pytest.mark.parametrize(("key", "argument", "required", "path"), [
    # an object or an array: the document's oneOf
    ("issues/add-labels", "body", [], {"owner": "o", "repo": "r", "issue_number": 1}),
    ("users/add-email", "email_addresses", ["email_addresses"], {}),  # an array, named by its title
])
def test_a_json_body_that_is_not_an_object_is_one_argument(key, argument, required, path):
    draft = _draft("github-like.yaml", key)

    assert draft.executor_config["body"] == {"argument": argument}
    assert "body_media_type" not in draft.executor_config  # JSON
    assert [r for r in draft.parameters["required"] if r == argument] == required
    assert _accepts(draft, {**path, argument: ["bug"]})


def test_a_text_body_is_one_string_argument_sent_as_text():
    draft = _draft("github-like.yaml", "markdown/render-raw")

    assert draft.executor_config == {
        "upstream": "api", "method": "POST", "path": "/markdown/raw", "body_media_type": "text/plain",
        "body": {"argument": "body"}, "idempotency_header": "Idempotency-Key",
    }
    assert draft.parameters["properties"] == {"body": {"type": "string"}}
    assert draft.parameters["required"] == []


# --- Twilio: filter names, form bodies that forgot to be required ----------------------------


def test_wire_names_that_are_no_argument_names_become_readable_ones():
    draft = _draft("twilio-like.json", "ListMessage")

    assert draft.executor_config["query"] == ["To", "DateSent", "date_sent_before", "date_sent_after",
                                              "page_size"]
    assert draft.executor_config["serialization"] == {
        "date_sent_before": {"name": "DateSent<"},
        "date_sent_after": {"name": "DateSent>"},
        "page_size": {"name": "page-size"},
    }
    assert draft.parameters["required"] == ["AccountSid"]


def test_the_members_a_form_body_requires_stay_required_when_the_body_is_not_marked_required():
    draft = _draft("twilio-like.json", "CreateMessage")

    assert draft.executor_config["body_media_type"] == FORM
    assert draft.executor_config["body"] == ["To", "Body", "MediaUrl"]
    # OpenAPI's default for a form's array, as Twilio takes it: MediaUrl=a&MediaUrl=b
    assert draft.executor_config["body_encoding"] == {"MediaUrl": {"style": "form", "explode": True}}
    assert draft.parameters["required"] == ["AccountSid", "To"]


# --- odd requests ----------------------------------------------------------------------------


def test_a_multipart_body_sends_its_fields_and_leaves_an_optional_file_out():
    draft = _draft("odd-requests.yaml", "postNote")

    assert draft.executor_config["body_media_type"] == "multipart/form-data"
    assert draft.executor_config["body"] == ["text", "tags"]
    assert draft.executor_config["body_encoding"] == {"tags": {"style": "form", "explode": False}}
    assert set(draft.parameters["properties"]) == {"text", "tags"}
    assert draft.parameters["required"] == ["text"]


@pytest.mark.parametrize(("key", "reason"), [
    ("uploadAvatar", "its multipart body needs the file field image; ToolHub does not upload files."),
    ("putBlob", "its request body is application/octet-stream; ToolHub sends JSON, form (urlencoded or "
                "multipart, without files) and text bodies, not files or octet streams."),
])
def test_file_uploads_and_octet_streams_are_skipped_with_the_reason(key, reason):
    assert _skipped("odd-requests.yaml", key) == reason


def test_parameters_named_alike_get_their_location_and_each_keeps_its_style():
    draft = _draft("odd-requests.yaml", "createBoard")

    config = draft.executor_config
    assert config["path"] == "/orgs/{path_owner}/boards"
    assert config["query"] == ["query_owner", "ids", "next"]
    assert config["headers"] == {"X-Tags": "x_tags"}
    assert config["cookies"] == {"color_scheme": "color_scheme"}
    assert config["serialization"] == {
        "query_owner": {"name": "owner"},
        "ids": {"style": "form", "explode": False},  # ids=1,2,3
        "next": {"allow_reserved": True},
        "x_tags": {"style": "simple", "explode": False},
    }
    assert config["body"] == ["owner", "layout"]
    assert config["send_null"] == ["/layout/columns"]
    assert draft.parameters["required"] == ["path_owner", "owner"]
    assert draft.parameters["properties"]["layout"]["additionalProperties"] is False


def test_a_path_parameter_in_another_style_says_which():
    draft = _draft("odd-requests.yaml", "getPoint")

    assert draft.executor_config["serialization"] == {"coordinates": {"style": "matrix", "explode": False}}


def test_header_parameters_the_transport_sets_are_left_out():
    operation = Operation(key="listThings", pointer="/paths/~1things/get", normalized={
        "method": "GET", "path": "/things", "operationId": "listThings", "summary": "", "description": "",
        "parameters": [
            {"name": "Accept", "in": "header", "schema": {"type": "string", "enum": ["application/json"]}},
            {"name": "Content-Type", "in": "header", "required": True, "schema": {"type": "string"}},
            {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
        ],
        "requestBody": None, "credential_parameters": [], "openapi": "3.1",
    })

    draft = draft_of(operation, upstream="api")

    assert draft.executor_config["headers"] == {"X-Trace": "x_trace"}
    assert set(draft.parameters["properties"]) == {"x_trace"}


def test_string_parameters_cannot_be_empty_unless_the_document_allows_it():
    draft = _draft("odd-requests.yaml", "listRevisions")

    properties = draft.parameters["properties"]
    # a path segment cannot be empty, and allowEmptyValue defaults to false
    for name in ("page_id", "ending_before", "x_request_tag", "locale"):
        assert properties[name]["minLength"] == 1, name
    assert "minLength" not in properties["q"]  # allowEmptyValue: true
    assert properties["cursor"]["minLength"] == 8  # the document's own
    assert "minLength" not in properties["order"]  # its enum says which values
    assert "minLength" not in properties["limit"]
    assert not _accepts(draft, {"page_id": ""})
    assert not _accepts(draft, {"page_id": "p1", "ending_before": ""})
    assert _accepts(draft, {"page_id": "p1", "ending_before": "rev_1", "q": ""})


def test_outside_a_json_body_a_maps_keys_cannot_be_empty():
    form = _draft("stripe-like.yaml", "PostCustomers")
    # metadata[]=x would be an array's item to the upstream, not the key ''
    metadata = form.parameters["properties"]["metadata"]["anyOf"][0]
    assert metadata["propertyNames"] == {"minLength": 1, "pattern": r"^[^\[\]]*$"}
    assert not _accepts(form, {"metadata": {"": "x"}})
    assert not _accepts(form, {"metadata": {"a[b]": "x"}})
    assert _accepts(form, {"metadata": {"order_id": "ORD-1"}})
    query = _draft("stripe-like.yaml", "GetCustomers")
    # an object with properties is closed: no key of the caller's choosing to check
    assert "propertyNames" not in query.parameters["properties"]["created"]["anyOf"][0]


def test_outside_a_json_body_a_required_array_or_object_cannot_be_empty():
    draft = _draft("stripe-like.yaml", "PostLinkAccountSessions")
    holder = {"type": "customer", "address": {"line1": "1 Main St"}}

    # an empty array or object writes nothing in a form: the upstream finds it missing
    assert not _accepts(draft, {"account_holder": holder, "permissions": []})
    no_address = {"type": "customer", "address": {}}
    assert not _accepts(draft, {"account_holder": no_address, "permissions": ["balances"]})
    assert _accepts(draft, {"account_holder": holder, "permissions": ["balances"], "prefetch": []})


def test_what_a_draft_leaves_out_is_recorded_with_the_reason():
    multipart = _draft("odd-requests.yaml", "postNote")
    assert multipart.dropped == (
        {"what": "the file field attachment of the multipart body",
         "reason": "ToolHub does not upload files"},
    )
    cookies = _draft("odd-requests.yaml", "getPreferences")
    # a session cookie is the credential's to send (the http config refuses it as an argument)
    assert cookies.executor_config["cookies"] == {"theme": "theme"}
    assert set(cookies.parameters["properties"]) == {"theme"}
    assert cookies.dropped == (
        {"what": "the header parameter Accept", "reason": "the transport sets it"},
        {"what": "the cookie parameter session_id", "reason": SESSION_COOKIE},
    )
    assert _draft("odd-requests.yaml", "createBoard").dropped == ()


@pytest.mark.django_db
def test_what_an_import_leaves_out_is_in_the_source_and_warned_about_on_the_draft():
    report = openapi_import(tenant=TenantFactory(slug="acme"), upstream="api", actor="curator",
                            document_text=(DOCUMENTS / "odd-requests.yaml").read_bytes(),
                            operation_ids=["getPreferences", "createBoard"])

    results = {r.key: r for r in report.results}
    assert {r.outcome for r in results.values()} == {"new"}
    version = ToolVersion.objects.get(pk=results["getPreferences"].version.pk)
    assert version.source["dropped"] == [
        {"what": "the header parameter Accept", "reason": "the transport sets it"},
        {"what": "the cookie parameter session_id", "reason": SESSION_COOKIE},
    ]
    [warning] = [f for f in results["getPreferences"].findings if f.code == "body-dropped"]
    assert "the cookie parameter session_id" in warning.why
    assert "dropped" not in ToolVersion.objects.get(pk=results["createBoard"].version.pk).source
    assert not [f for f in results["createBoard"].findings if f.code == "body-dropped"]


# --- through the import ----------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("document", ["stripe-like.yaml", "github-like.yaml", "twilio-like.json"])
def test_imported_versions_are_not_strict_and_keep_the_mapping(document):
    report = openapi_import(tenant=TenantFactory(slug="acme"), upstream="api", actor="curator",
                            document_text=(DOCUMENTS / document).read_bytes())

    assert {r.outcome for r in report.results} == {"new"}
    for result in report.results:
        version = ToolVersion.objects.get(pk=result.version.pk)
        assert version.strict is False
        assert version.executor_config == _draft(document, result.key).executor_config
        assert result.lint_errors == 0, [f.message for f in result.findings]
