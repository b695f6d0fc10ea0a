"""How the gateway reports what agents could not do without importing the app that records it.

A miss happens in the gateway (an `unknown_tool` answer, a `request_capability` call), but
`capabilities` is a leaf above the gateway in the layers: the gateway may not import it.
So the capabilities app registers its recorder here when Django starts
(CapabilitiesConfig.ready), and the gateway hands it plain values. Common imports no app.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured


class UnknownToolCalled(Protocol):
    def __call__(
        self,
        *,
        tenant_id: int,
        agent_name: str,
        task_id: str,
        call_id: str,
        tool: str,
        toolset: str,
        phase: str,
        arguments: Any,
        elsewhere: bool,
    ) -> None:
        """Count a call of a tool the agent cannot see here (`elsewhere`: it can in another
        toolset or phase). Never raises: it is analytics, the call's envelope goes out as is."""


class CapabilityRequested(Protocol):
    def __call__(
        self,
        *,
        tenant_slug: str,
        task_id: str,
        call_id: str,
        capability: str,
        reason: str,
        example_arguments: str | None,
        opened: Sequence[str],
    ) -> dict[str, Any]:
        """Count a `request_capability` call, with the tools it opened to the task; returns the
        tool's result for the model."""


@dataclass(frozen=True)
class CapabilityRecorder:
    unknown_tool_called: UnknownToolCalled
    capability_requested: CapabilityRequested


_recorder: list[CapabilityRecorder] = []


def register_capability_recorder(recorder: CapabilityRecorder) -> None:
    _recorder[:] = [recorder]


def capability_recorder() -> CapabilityRecorder:
    if not _recorder:
        raise ImproperlyConfigured("No capability recorder is registered: is apps.capabilities installed?")
    return _recorder[0]
