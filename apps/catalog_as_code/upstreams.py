"""Upstreams in a catalog document, a tenant's or the platform's: by name, the kind, base URL
(or, for a stdio MCP server, the launcher by name and its arguments: launchers are the
platform's machines' business and not in any document), timeouts, the MCP settings, and the
credential they send by name, kind and field, never its value. Applying creates a missing
credential with no value (calls through it fail until someone sets one, and the command says
so) and never deletes an upstream. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from apps.upstreams.models import Upstream

from .checks import Problem, expect, unknown_keys

UPSTREAM_FIELDS = ("kind", "base_url", "timeout_s", "status_tool", "sync_interval_minutes",
                   "suspend_drifted_tools")
CREDENTIAL_FIELDS = ("name", "kind", "field")


def upstreams_section(upstreams: Iterable[Upstream]) -> dict[str, Any]:
    """Upstreams by name; expects their credential and launcher selected."""
    return {
        upstream.name: {
            **{name: getattr(upstream, name) for name in UPSTREAM_FIELDS},
            **_launched(upstream.launcher.name if upstream.launcher else None, upstream.launcher_args),
            "credential": {name: getattr(upstream.credential, name) for name in CREDENTIAL_FIELDS}
            if upstream.credential is not None else None,
        }
        for upstream in sorted(upstreams, key=lambda u: u.name)
    }


def _launched(launcher: str | None, args: list[str]) -> dict[str, Any]:
    """The launcher keys of an upstream entry: none for an upstream at a URL."""
    return {} if launcher is None else {"launcher": launcher, "launcher_args": args}


def _check_upstream(raw: Any, path: str, problems: list[Problem]) -> dict[str, Any] | None:
    if not expect(raw, dict, path, "a mapping (an upstream)", problems):
        return None
    unknown_keys(raw, (*UPSTREAM_FIELDS, "launcher", "launcher_args", "credential"), path, problems)
    defaults = {field.name: field.get_default() for field in Upstream._meta.concrete_fields}
    entry = {name: raw.get(name, defaults[name]) for name in UPSTREAM_FIELDS}
    if not expect(entry["base_url"], str, f"{path}.base_url", "a URL", problems):
        return None
    launcher, args = raw.get("launcher"), raw.get("launcher_args", [])
    if launcher is not None and not expect(launcher, str, f"{path}.launcher", "a launcher's name", problems):
        return None
    if not (isinstance(args, list) and all(isinstance(arg, str) for arg in args)):
        problems.append(Problem(f"{path}.launcher_args", "expected a list of strings (the arguments)"))
        return None
    entry.update(_launched(launcher, args))
    credential = raw.get("credential")
    if credential is not None:
        if not expect(credential, dict, f"{path}.credential", "a mapping (name, kind, field)", problems):
            return None
        unknown_keys(credential, CREDENTIAL_FIELDS, f"{path}.credential", problems)
        if "value" in credential:
            problems.append(Problem(f"{path}.credential.value", "a document never holds a secret; set the "
                                    "value in the admin (Upstreams → Credentials) after applying."))
        credential = {"name": credential.get("name"), "kind": credential.get("kind"),
                      "field": credential.get("field") or ""}
        if not expect(credential["name"], str, f"{path}.credential.name", "a credential name", problems):
            return None
    return {**entry, "credential": credential}



def check_upstreams(raw: Any, problems: list[Problem]) -> dict[str, Any] | None:
    """The `upstreams` section checked, or None when it is not a mapping (a problem says so)."""
    if not expect(raw, dict, "upstreams", "a mapping of upstream name → upstream", problems):
        return None
    upstreams = {str(n): _check_upstream(e, f"upstreams.{n}", problems) for n, e in raw.items()}
    return {n: e for n, e in sorted(upstreams.items()) if e is not None}
