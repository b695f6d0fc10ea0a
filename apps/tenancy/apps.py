"""apps.tenancy owns tenants, agents and their hashed keys, session tokens, grants, tenant
policies, tenant-scoped staff, and which tenant an admin user sees.

May import: upstreams, audit, common (layers contract, pyproject.toml; today it uses audit
and common only); never catalog, which sits beside it: a grant names its tool by model
reference.
"""

from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "apps.tenancy"
    label = "tenancy"
    verbose_name = "Tenancy"

    def ready(self) -> None:
        # Registers the agent-key scheme with drf-spectacular.
        from .api import schema  # noqa: F401
