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
