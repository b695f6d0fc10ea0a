"""apps.capabilities (a leaf) owns what agents asked for and could not get, grouped and
counted for curators; it hears of them through common's capability hooks.

May import: gateway and every app below it (layers contract, pyproject.toml); not imports or
catalog_as_code, which sit beside it. No app imports it.
"""

from django.apps import AppConfig


class CapabilitiesConfig(AppConfig):
    name = "apps.capabilities"
    label = "capabilities"
    verbose_name = "Capabilities"

    def ready(self) -> None:
        # The gateway reports misses through this hook: it may not import this app.
        from apps.common.capability_hooks import CapabilityRecorder, register_capability_recorder

        from .services import capability_note_unknown_tool, capability_requested

        register_capability_recorder(
            CapabilityRecorder(
                unknown_tool_called=capability_note_unknown_tool, capability_requested=capability_requested
            )
        )
