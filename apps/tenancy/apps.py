from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "apps.tenancy"
    label = "tenancy"
    verbose_name = "Tenancy"

    def ready(self) -> None:
        # Registers the agent-key scheme with drf-spectacular.
        from .api import schema  # noqa: F401
