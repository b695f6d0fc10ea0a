"""Every admin page and action, generated from the URL conf and `admin.site`, as requests a
tenant's staff could make about another tenant's rows.

A page added to a ModelAdmin (`get_urls`) is probed like the built-in ones when its URL
parameters can be filled (`FILLERS`); one that cannot is reported by the coverage test
until a filler is added here. Pages of the admin site itself (not of one model) are
probed by `site_urls`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from django.contrib import admin
from django.contrib.admin import ModelAdmin
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.http import HttpRequest
from django.urls import reverse

from .routes import Route, all_routes

SITE = admin.site
_PARAMETER = re.compile(r"<(?:\w+:)?(\w+)>")


def mount() -> str:
    """Where the admin lives in the URL conf, e.g. "admin/"."""
    return reverse(f"{SITE.name}:index").lstrip("/")


def registered() -> list[tuple[type[models.Model], ModelAdmin]]:
    return sorted(SITE._registry.items(), key=lambda item: item[0]._meta.label)


def admin_of(label: str) -> tuple[type[models.Model], ModelAdmin]:
    return next((model, model_admin) for model, model_admin in registered() if model._meta.label == label)


def _prefix(model: type[models.Model]) -> str:
    return f"{mount()}{model._meta.app_label}/{model._meta.model_name}/"


def model_routes(model: type[models.Model]) -> list[Route]:
    return [route for route in all_routes() if route.path.startswith(_prefix(model))]


def site_routes() -> list[Route]:
    """Admin routes that belong to no registered model: index, login, app lists, dashboards..."""
    prefixes = tuple(_prefix(model) for model, _ in registered())
    return [
        route for route in all_routes()
        if route.path.startswith(mount()) and not route.path.startswith(prefixes)
    ]


def _buttons(model_admin: ModelAdmin, obj: models.Model, request: HttpRequest) -> list[str]:
    buttons = getattr(model_admin, "object_buttons", None)
    return [button.name for button in buttons(request, obj)] if buttons else []


# How to fill a model page's URL parameters for one object, seen by a superuser's request.
FILLERS: dict[str, Callable[[ModelAdmin, models.Model, HttpRequest], list[str]]] = {
    "object_id": lambda model_admin, obj, request: [str(obj.pk)],
    "id": lambda model_admin, obj, request: [str(obj.pk)],
    "button": _buttons,
}


def fillable(route: Route) -> bool:
    return set(route.kwargs) <= set(FILLERS)


def _fill(path: str, values: dict[str, str]) -> str:
    return "/" + _PARAMETER.sub(lambda m: values[m.group(1)], path)


def model_urls(
    route: Route, model_admin: ModelAdmin, obj: models.Model, request: HttpRequest
) -> list[str]:
    """The URLs of one model page about `obj`, every combination of its parameters."""
    combinations: list[dict[str, str]] = [{}]
    for name in route.kwargs:
        values = FILLERS[name](model_admin, obj, request)
        combinations = [{**combo, name: value} for combo in combinations for value in values]
    return [_fill(route.path, combo) for combo in combinations]


def site_urls(route: Route, objects: list[models.Model]) -> list[str] | None:
    """The URLs of one admin-site page, about `objects` where it takes one; None if unknown."""
    kwargs = set(route.kwargs)
    if not kwargs:
        return [_fill(route.path, {})]
    if kwargs == {"app_label"}:
        labels = sorted({model._meta.app_label for model, _ in registered()})
        return [reverse(route.name, kwargs={"app_label": label}) for label in labels]
    if len(kwargs) == 1 and (name := next(iter(kwargs))).endswith("_id"):
        # A page about one row of a model, e.g. `upstream_id`: one URL per such row.
        return [_fill(route.path, {name: str(obj.pk)})
                for obj in objects if obj._meta.model_name == name.removesuffix("_id")]
    if kwargs == {"content_type_id", "object_id"}:
        return [
            _fill(route.path, {"content_type_id": str(ContentType.objects.get_for_model(obj).pk),
                               "object_id": str(obj.pk)})
            for obj in objects
        ]
    return None


def autocomplete_urls() -> Iterator[str]:
    """The admin's autocomplete for every relation of every registered model whose target
    admin can search: what a select box would offer a user."""
    url = reverse(f"{SITE.name}:autocomplete")
    for model, _ in registered():
        for field in model._meta.get_fields():
            target = getattr(field, "related_model", None)
            if not (field.is_relation and field.concrete and target in SITE._registry):
                continue
            if not SITE._registry[target].search_fields:
                continue
            yield (
                f"{url}?app_label={model._meta.app_label}&model_name={model._meta.model_name}"
                f"&field_name={field.name}&term="
            )


def action_names(model_admin: ModelAdmin, request: HttpRequest) -> list[str]:
    return list(model_admin.get_actions(request))


def uncovered_admin_routes() -> list[Route]:
    """Admin routes this module cannot probe: they need a filler or an allow-list entry."""
    missing = [route for model, _ in registered() for route in model_routes(model) if not fillable(route)]
    missing += [route for route in site_routes() if site_urls(route, []) is None]
    return missing


def response_text(response: Any) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode(errors="replace")
