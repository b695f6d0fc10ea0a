"""The "Import tools" page of an MCP server upstream: the SDK's own server on loopback is
listed, the curator ticks tools, drafts are made as `import_mcp` makes them; each tenant's
staff reach only their own upstreams, and a platform upstream's tools are imported by
superusers."""

from __future__ import annotations

from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.catalog.models import ToolVersion
from apps.upstreams.models import Upstream
from tests.factories import UpstreamFactory
from tests.mcp_upstream import free_port

from .conftest import logged_in, staff_user


def page_of(upstream: Upstream) -> str:
    return reverse("admin:imports_mcp_tools", args=[upstream.pk])


def curator(username: str, tenant):
    """Tenant staff who may edit upstreams and add tools."""
    user = staff_user(username, tenant=tenant)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="upstreams"))
    return logged_in(user)


def test_the_upstreams_page_links_to_its_import_and_lists_the_servers_tools(world, shipping):
    # given
    upstream = UpstreamFactory(mcp=True, tenant=world.acme.tenant, name="shipping", base_url=shipping.url)
    acme = curator("acme-curator", world.acme.tenant)

    # when
    upstream_page = acme.get(reverse("admin:upstreams_upstream_change", args=[upstream.pk])).content.decode()
    page = acme.get(page_of(upstream))

    # then: each tool with the side effect its draft would get, nothing imported yet
    assert f'href="{page_of(upstream)}" id="import-tools">Import tools</a>' in upstream_page
    html = page.content.decode()
    assert page.status_code == 200 and 'name="tenant"' not in html
    assert '<code>track_shipment</code>' in html and '<code>schedule_pickup</code>' in html
    assert "Book a courier pickup for a shipment." in html
    row = html[html.index("<code>pickup_status</code>"):]
    assert row.index("readonly") < row.index("</tr>")
    assert "readOnlyHint=True" in row[: row.index("</tr>")]
    assert not ToolVersion.objects.filter(source__kind="mcp").exists()


def test_ticked_tools_become_drafts_shown_with_side_effect_and_lint(world, shipping):
    # given
    upstream = UpstreamFactory(mcp=True, tenant=world.acme.tenant, name="shipping", base_url=shipping.url)
    acme = curator("acme-curator", world.acme.tenant)

    # when
    response = acme.post(page_of(upstream), {"tools": ["track_shipment", "schedule_pickup"]})

    # then: one draft per ticked tool, in acme's catalog, linked from the page
    assert response.status_code == 200
    drafts = {v.tool.name: v for v in ToolVersion.objects.filter(source__kind="mcp").select_related("tool")}
    assert set(drafts) == {"track_shipment", "schedule_pickup"}
    assert {v.tool.tenant_id for v in drafts.values()} == {world.acme.tenant.pk}
    assert drafts["schedule_pickup"].executor_config["idempotency_argument"] == "idempotency_key"
    html = response.content.decode()
    for version in drafts.values():
        link = reverse("admin:catalog_toolversion_change", args=[version.pk])
        assert f'href="{link}">{version.tool.name} v1</a> (draft)' in html
    results = html[html.index('id="import-results"'):html.index('id="import-form"')]
    assert results.count('class="import-new"') == 2
    assert "<td>write</td>" in results and "<td>readonly</td>" in results
    assert "lint-" in results or "no findings" in results
    # the listing now says which tools were imported
    listing = html[html.index('id="listed-tools"'):]
    assert f'{drafts["track_shipment"].tool.name} v1</a> (draft)' in listing


def test_the_listing_reads_the_imported_versions_in_queries_that_do_not_grow_with_the_tools(world, shipping):
    # given: two of the listed tools imported
    upstream = UpstreamFactory(mcp=True, tenant=world.acme.tenant, name="shipping", base_url=shipping.url)
    acme = curator("acme-curator", world.acme.tenant)
    acme.post(page_of(upstream), {"tools": ["track_shipment", "schedule_pickup"]})
    with CaptureQueriesContext(connection) as two_imported:
        acme.get(page_of(upstream))

    # when: two more are imported
    acme.post(page_of(upstream), {"tools": ["pickup_status", "cancel_shipment"]})
    with CaptureQueriesContext(connection) as four_imported:
        html = acme.get(page_of(upstream)).content.decode()

    # then: the same queries, and each imported tool links to its version
    assert len(four_imported) == len(two_imported)
    listing = html[html.index('id="listed-tools"'):]
    for version in ToolVersion.objects.filter(source__kind="mcp").select_related("tool"):
        link = reverse("admin:catalog_toolversion_change", args=[version.pk])
        assert f'href="{link}">{version.tool.name} v1</a> (draft)' in listing
    assert ToolVersion.objects.filter(source__kind="mcp").count() == 4


def test_ticking_nothing_imports_nothing(world, shipping):
    upstream = UpstreamFactory(mcp=True, tenant=world.acme.tenant, name="shipping", base_url=shipping.url)

    response = curator("acme-curator", world.acme.tenant).post(page_of(upstream), {})

    assert "Tick at least one tool." in response.content.decode()
    assert not ToolVersion.objects.filter(source__kind="mcp").exists()


def test_an_unreachable_server_is_a_clear_error_on_the_page(world):
    # given: nothing listens at the upstream's URL
    upstream = UpstreamFactory(mcp=True, tenant=world.acme.tenant, name="shipping",
                               base_url=f"http://127.0.0.1:{free_port()}/mcp")
    acme = curator("acme-curator", world.acme.tenant)

    # when
    page = acme.get(page_of(upstream)).content.decode()
    posted = acme.post(page_of(upstream), {"tools": ["track_shipment"]}).content.decode()

    # then
    said = "The tools of &#x27;shipping&#x27; cannot be listed: no session with upstream shipping"
    assert said in page and "that the server is running" in page
    assert f"Nothing was imported. {said}" in posted
    assert not ToolVersion.objects.filter(source__kind="mcp").exists()


def test_another_tenants_staff_cannot_reach_the_page(world, shipping):
    # given: acme's server
    upstream = UpstreamFactory(mcp=True, tenant=world.acme.tenant, name="shipping", base_url=shipping.url)
    globex = curator("globex-curator", world.globex.tenant)

    # when
    seen = globex.get(page_of(upstream))
    posted = globex.post(page_of(upstream), {"tools": ["track_shipment"]})

    # then: as if it did not exist, and the server was never asked
    assert (seen.status_code, posted.status_code) == (404, 404)
    assert b"shipping" not in seen.content
    assert shipping.initializes == 0
    assert not ToolVersion.objects.filter(source__kind="mcp").exists()


def test_a_platform_servers_tools_are_imported_by_a_superuser_into_the_tenant_picked(
    world, shipping, superuser
):
    # given: a platform upstream, which tenant staff may use but not import from
    upstream = UpstreamFactory(mcp=True, platform=True, name="platform-shipping", base_url=shipping.url)
    acme = curator("acme-curator", world.acme.tenant)
    assert acme.get(page_of(upstream)).status_code == 404
    upstream_page = acme.get(reverse("admin:upstreams_upstream_change", args=[upstream.pk])).content.decode()
    assert "Import tools" not in upstream_page

    # when: the superuser picks globex
    page = superuser.get(page_of(upstream)).content.decode()
    without_tenant = superuser.post(page_of(upstream), {"tools": ["track_shipment"]})
    superuser.post(page_of(upstream), {"tools": ["track_shipment"], "tenant": world.globex.tenant.pk})

    # then
    assert 'name="tenant"' in page
    assert "This field is required." in without_tenant.content.decode()
    version = ToolVersion.objects.select_related("tool").get(source__kind="mcp")
    assert version.tool.tenant == world.globex.tenant
    assert version.executor_config == {"upstream": "platform-shipping", "tool": "track_shipment"}


def test_a_long_description_is_shown_cut_with_an_ellipsis_not_as_if_the_server_ended_there(world, shipping):
    # given: a tool whose description runs past what the page shows
    def rates(shipment_id: str) -> str:
        return "12.50 EUR"

    shipping.add_tool(rates, description="Shipping rates. " + "Read the carrier's terms first. " * 20)
    upstream = UpstreamFactory(mcp=True, tenant=world.acme.tenant, name="shipping", base_url=shipping.url)

    # when
    html = curator("acme-curator", world.acme.tenant).get(page_of(upstream)).content.decode()

    # then
    row = html[html.index("<code>rates</code>"):]
    row = row[: row.index("</tr>")]
    assert "Shipping rates. Read the carrier" in row and "…" in row


def test_a_recursive_schema_and_a_nul_name_are_listed_as_not_importable_with_the_reason(world, shipping):
    # given: the server also lists a tool whose schema contains itself, and one named with a NUL
    shipping.list_as_written("recurse", {"type": "object", "properties": {"n": {"$ref": "#"}}})
    shipping.list_as_written("bad\x00name", {"type": "object", "properties": {}})
    upstream = UpstreamFactory(mcp=True, tenant=world.acme.tenant, name="shipping", base_url=shipping.url)
    acme = curator("acme-curator", world.acme.tenant)

    # when
    page = acme.get(page_of(upstream))
    posted = acme.post(page_of(upstream), {"tools": ["recurse", "bad\x00name", "track_shipment"]})

    # then: both shown, each with why it cannot be imported; the others still can be
    assert page.status_code == 200, page.content[:300]
    html = page.content.decode()
    recurse = html[html.index("<code>recurse</code>"):]
    recurse = recurse[: recurse.index("</tr>")]
    assert "cannot be imported: its schema is recursive (/properties/n refers to" in recurse
    bad = html[html.index("<code>bad\\u0000name</code>"):]
    bad = bad[: bad.index("</tr>")]
    assert "cannot be imported: its definition cannot be stored: at /name, contains a NUL" in bad
    assert 'value="recurse"' not in html and "\x00" not in html
    # and ticking them anyway imports only the tool that can be
    assert posted.status_code == 200, posted.content[:300]
    assert set(ToolVersion.objects.filter(source__kind="mcp").values_list("tool__name", flat=True)) == {
        "track_shipment"
    }
