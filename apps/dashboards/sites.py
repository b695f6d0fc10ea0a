"""ToolHub's admin site: the stock one plus the operators' dashboard, the try-it console and the
import pages (apps/imports)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, path


class ToolHubAdminSite(admin.AdminSite):
    site_header = "ToolHub"
    site_title = "ToolHub"
    index_title = "Curation and operations"
    # The header's links (dashboard, queues, versions) and the index do the navigating; the
    # sidebar would take a fifth of every wide list and page.
    enable_nav_sidebar = False

    def get_urls(self) -> list[URLPattern | URLResolver]:
        from apps.imports.admin_views import (
            mcp_tools_import_view,
            openapi_import_run_view,
            openapi_import_view,
        )

        from .try_it import version_try_view
        from .views import dashboard_view

        dashboard = path("dashboard/", self.admin_view(dashboard_view), name="toolhub_dashboard")
        # Before the version admin's own URLs, whose catch-all would take it.
        try_it = path("catalog/toolversion/<path:object_id>/try/", self.admin_view(version_try_view),
                      name="catalog_toolversion_try")
        openapi_import = path("imports/openapi/", self.admin_view(openapi_import_view),
                              name="imports_openapi")
        openapi_import_run = path("imports/openapi/<int:run_id>/", self.admin_view(openapi_import_run_view),
                                  name="imports_openapi_run")
        mcp_tools_import = path("imports/mcp/<int:upstream_id>/", self.admin_view(mcp_tools_import_view),
                                name="imports_mcp_tools")
        return [dashboard, try_it, openapi_import, openapi_import_run, mcp_tools_import, *super().get_urls()]
