"""ToolHub's admin site: the stock one plus the operators' dashboard."""

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
        from .views import dashboard_view

        dashboard = path("dashboard/", self.admin_view(dashboard_view), name="toolhub_dashboard")
        return [dashboard, *super().get_urls()]
