from django.contrib.admin.apps import AdminConfig


class ToolHubAdminConfig(AdminConfig):
    """django.contrib.admin with ToolHub's admin site (its dashboard and branding)."""

    default_site = "apps.dashboards.sites.ToolHubAdminSite"
