"""A document of the run read from its file, and the path of its first server (the one
ToolHub's import uses as the upstream's base URL). No Django: the standalone loopback
upstream (`python -m conformance.upstream`) reads documents too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from apps.imports.openapi import Document, first_server_url


def load_document(path: Path) -> dict[str, Any]:
    """The document as data (JSON, or YAML with libyaml's loader when there is one: Stripe's
    4 MB parse in seconds instead of a minute)."""
    text = path.read_bytes()
    if path.suffix == ".json":
        loaded = json.loads(text)
    else:
        loaded = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(loaded, dict):
        raise ValueError(f"{path.name} is not an OpenAPI document (not an object).")
    return loaded


def server_path(content: dict[str, Any]) -> str:
    """The path of the document's first server (`/v1` of https://api.example.com/v1; empty
    for Stripe's https://api.stripe.com/, whose paths start with /v1)."""
    url = first_server_url(Document(openapi="", title="", version="", content=content))
    return urlsplit(url or "").path.rstrip("/")
