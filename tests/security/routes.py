"""Every URL pattern of the project, walked from the root URL conf, for tests that must not
forget an endpoint: a pattern added anywhere shows up here without anyone listing it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver


@dataclass(frozen=True)
class Route:
    path: str  # as the URL conf spells it, e.g. "admin/tenancy/agent/<path:object_id>/change/"
    name: str | None  # namespaced, e.g. "admin:tenancy_agent_change"
    kwargs: tuple[str, ...]  # the captured parameters
    callback: Any

    @property
    def view_class(self) -> type | None:
        return getattr(self.callback, "cls", None) or getattr(self.callback, "view_class", None)

    @property
    def accepts_post(self) -> bool:
        cls = self.view_class
        return cls is not None and hasattr(cls, "post")


def _walk(resolver: URLResolver, prefix: str, namespace: str) -> Iterator[Route]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _walk(entry, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            yield Route(
                path=prefix + str(entry.pattern),
                name=f"{namespace}{entry.name}" if entry.name else None,
                kwargs=tuple(entry.pattern.regex.groupindex),
                callback=entry.callback,
            )


def all_routes() -> list[Route]:
    return list(_walk(get_resolver(), "", ""))


def agent_api_routes() -> list[Route]:
    return [route for route in all_routes() if route.path.startswith("api/v1/")]
