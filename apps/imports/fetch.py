"""Fetching a document by URL: through the egress policy, with a timeout and a size cap."""

from __future__ import annotations

from apps.gateway.outbound import (
    FetchFailed,
    FetchRefused,
    FetchTooLarge,
    FetchUnsuccessful,
    fetch_document,
)

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
        return fetch_document(
            url=url, max_bytes=limit, timeout_s=TIMEOUT_S, accept="application/json, application/yaml"
        )
    except FetchRefused as exc:
        raise ImportRefused(f"The egress policy refuses {url}: {exc.reason}. Nothing was fetched.") from None
    except FetchUnsuccessful as exc:
        raise ImportRefused(f"Fetching {url} answered HTTP {exc.status_code}.") from None
    except FetchTooLarge as exc:
        if exc.limit is not None:
            raise ImportRefused(too_large(f"The document at {url}", None, exc.limit)) from None
        raise ImportRefused(f"The document at {url} is too large: {exc}.") from None
    except FetchFailed as exc:
        raise ImportRefused(f"Could not fetch {url} ({exc}).") from None
