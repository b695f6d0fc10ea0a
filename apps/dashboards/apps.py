"""apps.dashboards (a leaf) owns the admin site, the operators' dashboard with its hourly
rollups of the invocation log (a beat job), and the try-it console.

May import: every app but demo_shop (layers contract, pyproject.toml). Only demo_shop may
import it.
"""

from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class DashboardsConfig(AppConfig):
    """The dashboard's own tables: hourly rollups of the invocation log."""

    name = "apps.dashboards"
    label = "dashboards"
    default_auto_field = "django.db.models.BigAutoField"


class ToolHubAdminConfig(AdminConfig):
    """django.contrib.admin with ToolHub's admin site (its dashboard and branding)."""

    default_site = "apps.dashboards.sites.ToolHubAdminSite"
