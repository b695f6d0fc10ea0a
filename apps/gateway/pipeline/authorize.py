"""Stage 4: identity comes from the session, never from what the model sent.

A context binding names an argument the session fills (`user_id` ← `session.subject`). If the
model sends the field anyway, `overwrite` replaces it silently and `must_match` refuses a
different value: a model cannot act for another user by writing another id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.common.errors import ErrorDetail, ForbiddenError
from apps.common.schemas.normalizers import normalize_value
from apps.gateway.contracts import VersionSpec
from apps.gateway.text import clip, pointer
from apps.tenancy.sessions import SessionClaims

_ATTRIBUTE_PREFIX = "session.attributes."
_INTEGRATOR = "This is for the integrator, not the model: "


def apply_bindings(
    arguments: Mapping[str, Any], version: VersionSpec, session: SessionClaims | None
) -> dict[str, Any]:
    """A new dict with every bound field filled from the session. Raises ForbiddenError."""
    result = dict(arguments)
    if not version.context_bindings:
        return result
    if session is None:
        raise ForbiddenError(
            f"{version.tool_name} acts for an end user, and this call carries no session.",
            hint=_INTEGRATOR + "mint a session for the end user with POST /api/v1/sessions and "
            "send its token in the X-ToolHub-Session header. The model cannot fix this: do not "
            "retry, tell the user this action is not available right now.",
        )
    for field, binding in version.context_bindings.items():
        bound = _session_value(session, str(binding.get("source", "")), field, version)
        sent = result.get(field)
        if sent is not None and binding.get("policy") != "overwrite":
            ops = version.normalizers.get(field, ())
            if _comparable(normalize_value(sent, ops)) != _comparable(normalize_value(bound, ops)):
                raise ForbiddenError(
                    f"{field} does not match the current session.",
                    hint=f"Leave {field} out: ToolHub fills it from the session. You can only act "
                    "for the current user; if the user asked about someone else, tell them so.",
                    details=[ErrorDetail(path=pointer([field]), problem="differs from the session's value")],
                )
        result[field] = bound
    return result


def _session_value(session: SessionClaims, source: str, field: str, version: VersionSpec) -> Any:
    if source == "session.subject":
        value: Any = session.subject
        missing, mint_with = "no subject", 'a non-empty "subject"'
    elif source.startswith(_ATTRIBUTE_PREFIX):
        name = clip(source.removeprefix(_ATTRIBUTE_PREFIX), 40)
        value = session.attributes.get(source.removeprefix(_ATTRIBUTE_PREFIX))
        missing, mint_with = f'no attribute "{name}"', f'"attributes": {{"{name}": ...}}'
    else:
        raise ForbiddenError(
            f"{version.tool_name} fills {field} from {clip(source, 60)!r}, which ToolHub does not know.",
            hint="This tool's definition is broken, not your call: do not retry. Tell the user "
            "this action is unavailable; the operators must fix the tool's context bindings.",
        )
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ForbiddenError(
            f"The session has {missing}, which {version.tool_name} needs to fill {field}.",
            hint=_INTEGRATOR + f"mint the session with {mint_with} (POST /api/v1/sessions) and "
            "send its token in X-ToolHub-Session. The model cannot fix this: do not retry.",
        )
    return value


def _comparable(value: Any) -> Any:
    """Strings compare exactly after stripping; a number the model sent for a string id as text."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value
