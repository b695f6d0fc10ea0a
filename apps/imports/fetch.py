"""Fetching a document by URL: through the egress policy, with a timeout and a size cap."""

from __future__ import annotations

import httpx

from apps.common.egress import EgressRefused
from apps.gateway.executors.answer_limit import ResponseTooLarge
from apps.gateway.executors.egress import EgressTransport

from .errors import ImportRefused
from .limits import ImportLimits, too_large

TIMEOUT_S = 10.0


def document_fetch(*, url: str) -> bytes:
    """The body of `url`, fetched with GET through the egress policy (redirects followed,
    each judged again). Raises ImportRefused: refused by the policy, unreachable, not 2xx,
    larger than TOOLHUB_IMPORT_MAX_DOCUMENT_BYTES or than any answer ToolHub reads
    (TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES)."""
    limit = ImportLimits.from_settings().max_document_bytes
    try:
        with httpx.Client(
            transport=EgressTransport(), timeout=TIMEOUT_S, follow_redirects=True, max_redirects=3,
            headers={"User-Agent": "ToolHub/1", "Accept": "application/json, application/yaml"},
        ) as client, client.stream("GET", url) as response:
            if not response.is_success:
                raise ImportRefused(f"Fetching {url} answered HTTP {response.status_code}.")
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > limit:
                    raise ImportRefused(too_large(f"The document at {url}", None, limit))
            return bytes(body)
    except EgressRefused as exc:
        raise ImportRefused(f"The egress policy refuses {url}: {exc.reason}. Nothing was fetched.") from None
    except ResponseTooLarge as exc:
        raise ImportRefused(f"The document at {url} is too large: {exc}.") from None
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise ImportRefused(f"Could not fetch {url} ({type(exc).__name__}).") from None
