"""The demo shop's own API key: what its internal endpoints ask of a caller.

One secret for the shop's payments API and its order API (`DEMO_PAYMENTS_API_KEY`), as a
small shop would have; ToolHub's http executor sends it by name, never from arguments.
"""

from __future__ import annotations

import hmac

from django.conf import settings


def demo_api_key_matches(authorization_header: str) -> bool:
    """True when the header is `Bearer <the demo shop's API key>` (constant-time compare)."""
    expected = f"Bearer {settings.TOOLHUB_SECRETS['DEMO_PAYMENTS_API_KEY']}"
    return hmac.compare_digest(authorization_header.encode(), expected.encode())
