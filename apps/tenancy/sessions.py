"""Session tokens: who the end user is, signed by ToolHub, never taken from tool arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.core import signing

from apps.common.errors import ForbiddenError

_SALT = "toolhub.session.v1"
SESSION_HEADER = "HTTP_X_TOOLHUB_SESSION"


@dataclass(frozen=True)
class SessionClaims:
    tenant_id: int
    agent_id: int
    subject: str
    attributes: dict[str, Any] = field(default_factory=dict)
    expires_at: datetime = field(default_factory=lambda: datetime.now(UTC))


def sign_session(claims: SessionClaims) -> str:
    payload = {
        "t": claims.tenant_id,
        "a": claims.agent_id,
        "s": claims.subject,
        "at": claims.attributes,
        "exp": int(claims.expires_at.timestamp()),
    }
    return signing.dumps(payload, salt=_SALT, compress=True)


_HINT = (
    "This is for the integrator, not the model: mint a new token with POST /api/v1/sessions "
    "for the end user, with the same agent key, and send it in X-ToolHub-Session."
)


def verify_session(token: str, *, tenant_id: int, agent_id: int, now: datetime) -> SessionClaims:
    """The claims of a valid token for this tenant and agent; ForbiddenError otherwise."""
    try:
        payload = signing.loads(token, salt=_SALT)
    except signing.BadSignature:
        raise ForbiddenError("The session token is not valid (bad signature).", hint=_HINT) from None
    try:
        claims = SessionClaims(
            tenant_id=int(payload["t"]),
            agent_id=int(payload["a"]),
            subject=str(payload["s"]),
            attributes=dict(payload.get("at") or {}),
            expires_at=datetime.fromtimestamp(int(payload["exp"]), tz=UTC),
        )
    except (KeyError, TypeError, ValueError):
        raise ForbiddenError("The session token is malformed.", hint=_HINT) from None
    if claims.tenant_id != tenant_id or claims.agent_id != agent_id:
        raise ForbiddenError("The session token was minted for another agent.", hint=_HINT)
    if claims.expires_at <= now:
        raise ForbiddenError("The session token has expired.", hint=_HINT)
    return claims
