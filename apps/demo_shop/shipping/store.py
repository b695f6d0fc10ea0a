"""The demo shipping server's state: pickups by idempotency key and the tool descriptions
changed through `POST /drift`, in one JSON file so that a restart keeps both.

Each change is written to a temporary file that replaces the old one, so a crash leaves
either the old state or the new, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any


class PickupKeyReused(Exception):
    """An idempotency key came back with other arguments than its first request's."""


class ShippingStore:
    def __init__(self, path: Path | None) -> None:
        """State kept in `path` (created on first write); None keeps it in memory only."""
        self._path = path
        self._lock = threading.Lock()
        self._state: dict[str, Any] = {"pickups": {}, "descriptions": {}}
        if path is not None and path.exists():
            self._state.update(json.loads(path.read_text()))

    def pickup(self, idempotency_key: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._state["pickups"].get(idempotency_key)
            return None if found is None else dict(found["answer"])

    def pickup_for_shipment(self, shipment_id: str) -> dict[str, Any] | None:
        with self._lock:
            answers = [p["answer"] for p in self._state["pickups"].values()
                       if p["answer"]["shipment_id"] == shipment_id]
            return dict(answers[-1]) if answers else None

    def replay(self, idempotency_key: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The first answer to the key, or None when the key is new. Raises PickupKeyReused
        when the key came with other arguments."""
        with self._lock:
            return self._replay(idempotency_key, arguments)

    def pickup_once(
        self, idempotency_key: str, arguments: dict[str, Any], answer: dict[str, Any]
    ) -> dict[str, Any]:
        """Record `answer` for the key unless a request with the key was recorded meanwhile;
        the key's first answer. Raises PickupKeyReused like replay."""
        with self._lock:
            if (first := self._replay(idempotency_key, arguments)) is not None:
                return first
            self._state["pickups"][idempotency_key] = {"arguments": arguments, "answer": answer}
            self._save()
            return dict(answer)

    def _replay(self, idempotency_key: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        seen = self._state["pickups"].get(idempotency_key)
        if seen is None:
            return None
        if seen["arguments"] != arguments:
            raise PickupKeyReused(idempotency_key)
        return dict(seen["answer"])

    def descriptions(self) -> dict[str, str]:
        with self._lock:
            return dict(self._state["descriptions"])

    def set_description(self, tool: str, description: str | None) -> None:
        """Serve `description` for `tool` from now on; None serves the original again."""
        with self._lock:
            if description is None:
                self._state["descriptions"].pop(tool, None)
            else:
                self._state["descriptions"][tool] = description
            self._save()

    def _save(self) -> None:
        if self._path is None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self._path.parent, prefix=self._path.name, suffix=".tmp")
        with os.fdopen(handle, "w") as file:
            json.dump(self._state, file, indent=1, sort_keys=True)
        os.replace(temporary, self._path)
