"""Searching the granted tools for the one a request describes (apps/catalog/tool_search.py),
on the corpus of search_corpus.py: PostgreSQL's full-text and trigram search (the test
database), and the simple match other databases use."""

from __future__ import annotations

import pytest

from apps.catalog.models import ToolVersion, VersionStatus
from apps.catalog.tool_search import PostgresToolSearch, SimpleToolSearch, ToolSearch, tool_search
from apps.demo_shop.seed import demo_seed
from tests.catalog.factories import published
from tests.catalog.search_corpus import CHINESE_TOOLS, CORPUS, NOTHING_DOES
from tests.factories import ToolFactory, ToolVersionFactory

BACKENDS = [PostgresToolSearch, SimpleToolSearch]
# The simple match ties 快递什么时候能送到 between wuliu_genzong (快递) and fapiao_kaiju (发送到):
# each has one of its pairs, and without PostgreSQL's rank nothing separates them.
TOP_1_FLOOR = {PostgresToolSearch: len(CORPUS), SimpleToolSearch: len(CORPUS) - 1}


@pytest.fixture
def catalog() -> dict[str, int]:
    """The demo's tools and the Chinese ones, published: tool ids by name."""
    demo_seed()
    for name, definition in CHINESE_TOOLS.items():
        published(tool=ToolFactory(name=name), **definition)
    versions = ToolVersion.objects.filter(status=VersionStatus.PUBLISHED)
    return dict(versions.values_list("tool__name", "tool_id"))


def _report(search: ToolSearch, tool_ids: list[int]) -> tuple[int, list[str]]:
    hits, lines = 0, []
    for request, expected in CORPUS:
        found = search.search(request, tool_ids=tool_ids, limit=3)
        hits += found[0].name == expected
        lines.append(f"{request!r} → {expected}: " + ", ".join(f"{m.name} {m.score:.2f}" for m in found))
    return hits, lines


@pytest.mark.django_db
@pytest.mark.parametrize("backend", BACKENDS)
def test_each_request_of_the_corpus_finds_its_tool_first(catalog, backend):
    # given every tool of the corpus granted
    # when each request is searched
    hits, lines = _report(backend(), list(catalog.values()))

    # then its tool comes first (the lines say the scores, for choosing weights)
    print("\n".join(lines))
    assert hits >= TOP_1_FLOOR[backend], "\n".join(lines)


@pytest.mark.django_db
@pytest.mark.parametrize("backend", BACKENDS)
def test_most_requests_match_and_no_request_nothing_does(catalog, backend):
    search = backend()
    tool_ids = list(catalog.values())

    matched = [r for r, expected in CORPUS if search.search(r, tool_ids=tool_ids)[0].matched]
    for request in NOTHING_DOES:
        closest = search.search(request, tool_ids=tool_ids)
        # every tool may still be named as the closest, none as a match
        assert closest and not any(m.matched for m in closest), (request, closest)
    assert len(matched) >= len(CORPUS) - 3


@pytest.mark.django_db
@pytest.mark.parametrize("backend", BACKENDS)
def test_only_the_granted_tools_are_ever_named(catalog, backend):
    # given an agent granted only the shipping tools and one Chinese tool
    granted = {catalog[name] for name in ("track_shipment", "schedule_pickup", "pickup_status", "tuikuan")}
    search = backend()

    for request, _ in CORPUS + [(r, None) for r in NOTHING_DOES]:
        found = search.search(request, tool_ids=granted, limit=10)
        # then only they come back, all of them (closest first), whatever was asked
        assert {m.tool_id for m in found} == granted, request
    assert search.search("我要退款", tool_ids=granted)[0].name == "tuikuan"
    assert search.search("cancel a purchase", tool_ids=[]) == []


@pytest.mark.django_db
def test_a_tool_without_a_published_version_is_not_searched_and_a_pinned_one_is():
    tool = ToolFactory(name="export_orders")
    draft = ToolVersionFactory(tool=tool, description="Exports the user's orders as a CSV file.")
    old = published(tool=ToolFactory(name="order_report"), description="Sums order amounts per month.")
    newer = published(tool=old.tool, description="Lists the refunds of an order.")

    assert tool_search().search("export orders as csv", tool_ids=[tool.pk]) == []
    assert draft.search_document.startswith("export order")
    csv = published(tool=ToolFactory(name="order_file"), description="Writes orders to a CSV file.")
    assert tool_search().search("export orders as csv", tool_ids=[csv.tool_id])[0].matched
    found = tool_search().search("sum order amounts per month", tool_ids=[old.tool_id])
    pinned = tool_search().search("sum order amounts per month", tool_ids=[old.tool_id],
                                  pinned={old.tool_id: old.pk})
    assert newer.number > old.number and found[0].score < pinned[0].score and pinned[0].matched


def test_tool_search_is_postgresql_on_postgresql(db):
    assert isinstance(tool_search(), PostgresToolSearch)
