"""Buttons on an admin change page that each run one service for the object ("Publish",
"Issue key"), re-checked on POST, and refused when the page showed something other than
what is stored.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from django.contrib import messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import models
from django.forms.models import model_to_dict
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.urls import URLPattern, path

from .admin import _ModelAdminMixinBase, redirect_to_change
from .compat.django_admin import object_not_found

if TYPE_CHECKING:
    from django.template.response import _TemplateForResponseT


@dataclass(frozen=True)
class ObjectButton:
    """A POST button on an object's change page, e.g. "Publish" or "Issue key"."""

    name: str
    label: str
    # Optional free text sent with the button (a key's label, a note for the audit log).
    text_field: str = ""
    text_placeholder: str = ""
    confirm: str = ""
    # A form of its own in the page's action panel rather than a button in the top bar:
    # a required note (for the audit log) and optionally one more multi-line input.
    note_required: bool = False
    extra_field: str = ""
    extra_label: str = ""
    help: str = ""
    # Acts on the object as stored (Publish): the page sends a digest of what it showed, and
    # the press is refused when that is not what is stored (unsaved or invalid edits on the
    # page, or a save by someone else since it was opened).
    only_as_shown: bool = False


def stored_digest(obj: models.Model) -> str:
    """A digest of an object's stored field values: equal digests, same content."""
    values = json.dumps(model_to_dict(obj), sort_keys=True, default=str)
    return hashlib.sha256(values.encode()).hexdigest()


class ObjectButtonsMixin(_ModelAdminMixinBase):
    """Buttons on the change page that run one service for the object.

    `object_buttons` says which buttons this user may press on this object; the view
    re-checks it on POST, so a hand-made request cannot press a hidden button. A button
    `only_as_shown` is pressed from the page with the digest of what the page showed
    (`shown`, empty while the page holds edits); one that does not match what is stored is
    refused. Without `shown` (not pressed from a page, like a list action) it acts on what
    is stored.
    """

    change_form_template: ClassVar[_TemplateForResponseT | None] = (
        "admin/toolhub/change_form_with_buttons.html"
    )

    def object_buttons(self, request: HttpRequest, obj: Any) -> list[ObjectButton]:
        return []

    def run_object_button(self, request: HttpRequest, obj: Any, name: str) -> HttpResponse:
        raise NotImplementedError

    def get_urls(self) -> list[URLPattern]:
        opts = self.opts
        view = self.admin_site.admin_view(self._object_button_view)
        name = f"{opts.app_label}_{opts.model_name}_button"
        return [path("<path:object_id>/do/<slug:button>/", view, name=name), *super().get_urls()]

    def _object_button_view(self, request: HttpRequest, object_id: str, button: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            return object_not_found(self, request, object_id)
        offered = {b.name: b for b in self.object_buttons(request, obj)}
        if button not in offered:
            raise PermissionDenied
        pressed = offered[button]
        shown = request.POST.get("shown")
        if pressed.only_as_shown and shown is not None and shown != stored_digest(obj):
            what = obj._meta.verbose_name
            messages.error(request, (
                f"{pressed.label}: nothing was done. The page held changes that are not saved, or this "
                f"{what} was changed since the page was opened. Save your changes (or reload the page), "
                f"check it, then press {pressed.label} again."
            ))
            return redirect_to_change(self, obj)
        return self.run_object_button(request, obj, button)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None
    ) -> HttpResponse:
        obj = self.get_object(request, unquote(object_id))
        buttons = self.object_buttons(request, obj) if obj else []
        context = {
            "toolhub_buttons": [b for b in buttons if not b.note_required],
            "toolhub_panel_buttons": [b for b in buttons if b.note_required],
            "toolhub_shown_digest": stored_digest(obj) if obj else "",
            **(extra_context or {}),
        }
        return super().change_view(request, object_id, form_url, context)
