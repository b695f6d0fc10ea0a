"""The `http` executor: POST the arguments as JSON with an `Idempotency-Key` header.

Secrets are named in the version's config (`secret_ref`) and read from settings, never
from arguments. Each failure is classified by what we know about the side effect:
nothing sent (the request could not be built, or failed before a byte left: no http(s)
scheme, DNS failure, connection refused) → not applied; sent but no clear answer → ambiguous.

Only platform-owned tools may name platform settings (`secret_ref`, `url_setting`): checked
on save, and again here in case a tool changed owner. Every connection goes through the
egress policy (egress.py). Either refusal is `unavailable`, with nothing sent.

httpx's timeouts bound each read and write, not the whole exchange: an upstream that
drips a byte at a time would never trip them. So the exchange runs on a worker thread
and the caller stops waiting at the tool's timeout (the thread ends at httpx's own
timeouts or when the upstream finishes; like a timed-out python executor, the call may
still complete, which is why a timed-out write is `unknown`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from typing import Any
from urllib.parse import quote

import httpx
from django.conf import settings

from apps.catalog.definitions import platform_settings_named
from apps.common.errors import (
    BusinessRuleError,
    InvalidArgsError,
    NotFoundError,
    RateLimitedError,
    UnavailableError,
    UpstreamError,
)
from apps.common.request_context import in_current_context

from .base import (
    ExecutionAmbiguous,
    ExecutionNotSent,
    ExecutionRejected,
    ExecutionRequest,
    ExecutionTimedOut,
    ReconcileAnswer,
)
from .egress import EgressRefused, EgressTransport

logger = logging.getLogger("toolhub.egress")

_CLIENT = httpx.Client(
    transport=EgressTransport(), follow_redirects=False, headers={"User-Agent": "ToolHub/1"}
)
_POOL = ThreadPoolExecutor(max_workers=32, thread_name_prefix="toolhub-http")


def _base_url(config: Any) -> str:
    if config.get("url"):
        return str(config["url"]).rstrip("/")
    return str(getattr(settings, config["url_setting"])).rstrip("/")


def wire_idempotency_key(key: str) -> str:
    """The key as sent upstream: HTTP headers carry ASCII only, so other characters (a task id
    in another script) are percent-encoded. Unambiguous: a literal '%' is already '%25' in the key."""
    return quote(key, safe="/%-._~:@!$&'()*+,;=")


def _headers(request: ExecutionRequest) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if request.idempotency_key:
        headers["Idempotency-Key"] = wire_idempotency_key(request.idempotency_key)
    secret_ref = request.config.get("secret_ref")
    if secret_ref:
        headers["Authorization"] = f"Bearer {settings.TOOLHUB_SECRETS[secret_ref]}"
    return headers


def _config_refusal(request: ExecutionRequest) -> str | None:
    """Why this version's config cannot be used, checked before anything is sent: a platform
    setting named by a tenant's tool, or a secret or URL setting the platform does not have."""
    named = platform_settings_named(executor="http", executor_config=request.config)
    if named and not request.platform_owned:
        return (
            f"{request.tool_name} belongs to a tenant but names platform settings "
            f"({', '.join(named)}), which only shared-catalog tools may use"
        )
    if "secret_ref" in named and named["secret_ref"] not in settings.TOOLHUB_SECRETS:
        return f"{request.tool_name} names a secret ToolHub does not have ({named['secret_ref']})"
    if "url_setting" in named and not isinstance(getattr(settings, named["url_setting"], None), str):
        return f"{request.tool_name} names a URL setting ToolHub does not have ({named['url_setting']})"
    return None


def _unavailable(request: ExecutionRequest, reason: str) -> ExecutionRejected:
    """A refusal before sending: the tool cannot run as configured, so nothing was sent."""
    logger.warning("%s v%s refused, nothing sent: %s", request.tool_name, request.version_number, reason)
    return ExecutionRejected(UnavailableError(
        f"{request.tool_name} cannot reach its provider: {reason}. Nothing was sent, so nothing "
        "happened.",
        hint="This needs an operator (the tool's configuration or ToolHub's egress policy); calling "
        "again fails the same way. Tell the user the action was not done.",
    ))


def _upstream_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    return f"HTTP {response.status_code}"


def _rejection(response: httpx.Response, tool: str) -> ExecutionRejected:
    """A 4xx answer: the upstream refused the request, so nothing was applied."""
    message = _upstream_message(response)
    status = response.status_code
    if status == 404:
        error: Any = NotFoundError(
            f"{tool}: {message}", hint="Check the identifier; it may not exist for this user."
        )
    elif status in (400, 422):
        error = InvalidArgsError(
            f"{tool} refused the arguments: {message}",
            hint="Change the arguments as the message says; calling again unchanged fails again.",
        )
    elif status == 409:
        error = BusinessRuleError(
            f"{tool} refused the call: {message}",
            hint="The target's current state does not allow this call as it is; the message says "
            "why. Do not send it again unchanged: change it as the message says, or tell the user.",
        )
    elif status == 429:
        error = RateLimitedError(
            f"{tool}'s provider is rate limiting ToolHub.",
            hint="Wait a minute, then call again.",
            retry_after_s=60,
        )
    else:
        error = UpstreamError(
            f"{tool}'s provider refused ToolHub's request ({message}).",
            hint="This needs an operator (credentials or configuration); tell the user and do not retry.",
        )
    return ExecutionRejected(error)


def _within_timeout(request: ExecutionRequest, send: Callable[[], httpx.Response]) -> httpx.Response:
    """`send()`'s response, or ExecutionTimedOut once the tool's timeout has passed."""
    future = _POOL.submit(in_current_context(send))
    try:
        return future.result(timeout=request.timeout_s)
    except FutureTimeout:
        raise ExecutionTimedOut(
            f"no complete answer from {request.tool_name}'s provider within {request.timeout_s} s"
        ) from None


def run_http(request: ExecutionRequest) -> Any:
    if reason := _config_refusal(request):
        raise _unavailable(request, reason)
    try:
        outgoing = _CLIENT.build_request(
            "POST",
            _base_url(request.config) + str(request.config.get("path", "")),
            json=dict(request.arguments),
            headers=_headers(request),
            timeout=httpx.Timeout(request.timeout_s),
        )
    except (httpx.InvalidURL, LookupError, AttributeError, UnicodeError) as exc:
        # Nothing has left yet: a URL httpx cannot parse, a setting or secret ToolHub lacks,
        # a header value that is not ASCII.
        raise ExecutionNotSent(
            f"the request to {request.tool_name}'s provider could not be built: {type(exc).__name__}"
        ) from None
    try:
        response = _within_timeout(request, partial(_CLIENT.send, outgoing))
    except EgressRefused as exc:
        raise _unavailable(request, exc.reason) from None
    except (httpx.UnsupportedProtocol, httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
        # Raised before a byte is written: no http(s) scheme, DNS failure, connection refused.
        raise ExecutionNotSent(
            f"could not connect to {request.tool_name}'s provider: {type(exc).__name__}"
        ) from None
    except httpx.TimeoutException:
        raise ExecutionTimedOut(
            f"no answer from {request.tool_name}'s provider within {request.timeout_s} s"
        ) from None
    except httpx.TransportError as exc:
        raise ExecutionAmbiguous(f"the connection failed after sending: {type(exc).__name__}") from None
    if 400 <= response.status_code < 500:
        raise _rejection(response, request.tool_name)
    if response.status_code >= 500 or not response.is_success:
        raise ExecutionAmbiguous(f"the provider answered HTTP {response.status_code}")
    try:
        return response.json()
    except ValueError:
        raise ExecutionAmbiguous("the provider answered success with a body that is not JSON") from None


def reconcile_http(request: ExecutionRequest) -> ReconcileAnswer:
    """Ask the provider's status endpoint whether the request with this key was applied."""
    status_path = request.config.get("status_path")
    if not status_path or not request.idempotency_key:
        return ReconcileAnswer(found=None, note="this tool has no status endpoint to ask", retry=False)
    if reason := _config_refusal(request):
        return ReconcileAnswer(found=None, note=f"not asked: {reason}", retry=False)
    url = _base_url(request.config) + str(status_path)
    try:
        response = _within_timeout(
            request,
            partial(
                _CLIENT.get,
                url,
                params={"idempotency_key": wire_idempotency_key(request.idempotency_key)},
                headers=_headers(request),
                timeout=httpx.Timeout(request.timeout_s),
            ),
        )
    except EgressRefused as exc:
        return ReconcileAnswer(found=None, note=f"not asked, egress policy: {exc.reason}", retry=False)
    except httpx.HTTPError as exc:
        return ReconcileAnswer(found=None, note=f"status endpoint unreachable: {type(exc).__name__}")
    except ExecutionTimedOut:
        return ReconcileAnswer(
            found=None, note=f"status endpoint did not answer within {request.timeout_s} s"
        )
    if response.status_code == 200:
        try:
            return ReconcileAnswer(found=True, result=response.json(), note="found at the provider")
        except ValueError:
            return ReconcileAnswer(found=None, note="status endpoint answered a body that is not JSON")
    if response.status_code == 404:
        return ReconcileAnswer(found=False, note="the provider has no request with this key")
    return ReconcileAnswer(found=None, note=f"status endpoint answered HTTP {response.status_code}")
