"""The search document of a tool version (apps/catalog/search_text.py): what it holds, and
that it is written wherever versions are (services, bulk import, the migration)."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.db import connection

from apps.catalog.bulk import tools_create_with_drafts
from apps.catalog.models import Tool, ToolVersion
from apps.catalog.search_text import request_terms, search_document, search_words, split_identifier
from apps.catalog.services import tool_save, version_create_draft, version_publish, version_save_draft
from tests.catalog.factories import published
from tests.factories import SIMPLE_SCHEMA, TenantFactory, ToolFactory

CONTENT = {"description": "Refunds money of an order. At most 100 per call. Do not use it to cancel "
           "(use cancel_order).", "parameters": SIMPLE_SCHEMA, "side_effect": "readonly",
           "executor": "python", "executor_config": {"callable": "tests.echo"}}


def test_identifiers_are_split_and_words_normalized():
    assert split_identifier("refundPayment_v2") == "refund Payment v2"
    assert search_words("The Orders' deliveries, shipping_status and HTTPServer") == [
        "order", "delivery", "shipping", "status", "http", "server"]


def test_chinese_is_searched_by_character_pairs_without_function_characters():
    assert search_words("为订单退款") == ["为订", "订单", "单退", "退款"]
    assert search_words("帮我查一下订单") == ["订单"]
    assert [t.word for t in request_terms("我要退款 refund")] == ["退款", "refund"]


def test_the_document_has_name_description_and_nested_parameters_but_not_what_the_tool_does_not_do():
    parameters = {"type": "object", "properties": {
        "orderId": {"type": "string", "description": "The order's id."},
        "lines": {"type": "array", "items": {"type": "object", "properties": {
            "sku_code": {"type": "string", "description": "Stock keeping unit.", "enum": ["gift_wrap"]}}}},
    }}
    document = search_document(
        name="refund_payment", parameters=parameters,
        description="Refunds one order. Do not use it to cancel one (use cancel_order). Takes a day.",
    )
    assert document == "refund payment refund order take day order id order id line sku code stock keeping " \
        "unit gift wrap"


def test_phrases_and_synonyms_of_a_request():
    terms = {t.word: t.alternatives for t in request_terms("give the customer money back")}
    assert set(terms) == {"give", "customer", "refund"} and "user" in terms["customer"]


@pytest.mark.django_db
def test_the_document_is_written_when_a_draft_is_created_saved_and_published():
    tool = tool_save(tool=Tool(name="refund_payment"), actor="curator")
    draft = version_create_draft(tool=tool, actor="curator", **CONTENT)
    stored = ToolVersion.objects.get(pk=draft.pk)
    assert stored.search_document == "refund payment refund money order call query look"

    draft.description = "Refunds a parcel's postage. At most 1 per call. Never for orders."
    version_save_draft(version=draft, actor="curator")
    assert ToolVersion.objects.get(pk=draft.pk).search_document == "refund payment refund parcel postage " \
        "call query look"

    version_publish(version=draft, actor="curator")
    assert ToolVersion.objects.get(pk=draft.pk).search_document == "refund payment refund parcel postage " \
        "call query look"


@pytest.mark.django_db
def test_renaming_a_tool_renames_it_in_the_documents_of_its_published_versions():
    version = published(tool=ToolFactory(name="old_name"))
    version.tool.name = "parcel_lookup"
    tool_save(tool=version.tool, actor="curator")
    assert ToolVersion.objects.get(pk=version.pk).search_document.startswith("parcel lookup ")


@pytest.mark.django_db
def test_the_document_is_written_by_a_bulk_import():
    tenant = TenantFactory()
    [draft] = tools_create_with_drafts(tenant_id=tenant.pk, new=[("list_parcels", "", CONTENT)],
                                       actor="import")
    assert ToolVersion.objects.get(pk=draft.pk).search_document.startswith("list parcel refund money")


@pytest.mark.django_db
def test_the_migration_fills_the_documents_of_versions_stored_before_and_indexes_them():
    version = published(tool=ToolFactory(name="track_shipment"), description="Where a parcel is now. Only 1.")
    ToolVersion.objects.filter(pk=version.pk).update(search_document="")

    migration = importlib.import_module("apps.catalog.migrations.0011_version_search_document")
    migration.fill_documents(apps, None)

    document = ToolVersion.objects.get(pk=version.pk).search_document
    assert document.startswith("track shipment where parcel now")
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'catalog_toolversion'")
        indexes = {name for (name,) in cursor}
    assert {"catalog_version_search_fts", "catalog_version_search_trgm"} <= indexes
