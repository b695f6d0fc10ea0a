from django.apps import AppConfig


class CapabilitiesConfig(AppConfig):
    name = "apps.capabilities"
    label = "capabilities"
    verbose_name = "Capabilities"

    def ready(self) -> None:
        # Registers the request_capability executor with the gateway's python executor.
        from . import executors  # noqa: F401
