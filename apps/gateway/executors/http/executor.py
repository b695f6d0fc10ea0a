"""The `http` executor: a call becomes one request to the version's upstream API.

Where the request goes and which credentials it carries is the endpoint (`_endpoint`): a URL
or a platform URL setting, and a platform secret named by `secret_ref`, never anything from
arguments. How the arguments fill the request (method, path, query, headers, body) and which
part of the answer is the result is mapping.py. Each failure is classified by what we
know about the side effect: nothing sent (the request could not be built, or failed before a
byte left: no http(s) scheme, DNS failure, connection refused, no connection by the tool's
timeout) → not applied; sent but no clear answer → ambiguous.

Only platform-owned tools may name platform settings (`secret_ref`, `url_setting`): checked
on save, and again here in case a tool changed owner. Every connection goes through the
egress policy (../egress.py). Either refusal is `unavailable`, with nothing sent.

httpx's timeouts bound each read and write, not the whole exchange: an upstream that
drips a byte at a time would never trip them. So the exchange runs under the egress
transport's deadline (../egress.py): on the calling thread, every step of it ends by the
tool's timeout, and a timed-out write is `unknown` (the upstream may have applied it).
"""

from __future__ import annotations

import logging
import time
from functools import lru_cache
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any
from urllib.parse import quote

import httpx2
from django.conf import settings

from apps.catalog.definitions import path_problems, platform_settings_named
from apps.common.errors import InvalidArgsError, UnavailableError
from apps.upstreams.errors import SubjectCredentialMissing, UpstreamNotFound
from apps.upstreams.selectors import upstream_for_call

from ..answer_limit import ResponseTooLarge
from ..base import (
    AnswerTooLarge,
    ExecutionAmbiguous,
    ExecutionNotSent,
    ExecutionRejected,
    ExecutionRequest,
    ExecutionTimedOut,
    ReconcileAnswer,
)
from ..egress import EgressRefused, EgressTransport, deadline
from ..endpoint import Endpoint
from .mapping import RequestParts, ResponseShapeError, request_parts, selected_response, status_parts
from .upstream_errors import ErrorAnswer, refusal, wire_names

logger = logging.getLogger("toolhub.egress")
# The executor sends through the transport, not a client: it logs the line per request that
# httpx's client would, on its logger, for operators (apps/common/logs.py hides query values).
request_logger = logging.getLogger("httpx")

_TRANSPORT = EgressTransport()
# A jar that keeps nothing: a cookie one upstream sets must never go with another tenant's or
# user's request to the same host.
_CLIENT = httpx2.Client(
    transport=_TRANSPORT, follow_redirects=False, headers={"User-Agent": "ToolHub/1"},
    cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
)
# What every request's headers start from: httpx's defaults (Accept, Accept-Encoding,
# Connection) and ToolHub's User-Agent.
_BASE_HEADERS = _CLIENT.headers


def shared_client() -> httpx2.Client:
    """A client on the transport every http call goes through (its pool, the egress policy),
    with the same headers and no cookie jar."""
    return _CLIENT


def _exchange(request: ExecutionRequest, outgoing: httpx2.Request) -> httpx2.Response:
    """The whole answer to `outgoing`, within the tool's timeout (httpx2.TimeoutException past
    it), through the transport alone: no redirect is followed, and nothing of httpx's client
    (auth flows, cookies, event hooks) runs per call."""
    with deadline(request.timeout_s):
        response = _TRANSPORT.handle_request(outgoing)
        request_logger.info(
            'HTTP Request: %s %s "%s %d %s"', outgoing.method, outgoing.url, response.http_version,
            response.status_code, response.reason_phrase,
        )
        try:
            response.read()
        finally:
            response.close()
    return response


@lru_cache(maxsize=64)
def _timeout(seconds: float) -> httpx2.Timeout:
    return httpx2.Timeout(seconds)


def _endpoint(request: ExecutionRequest) -> Endpoint:
    """The endpoint of the version's config. Raises ExecutionRejected (`unavailable`, nothing
    sent) when the config cannot be used."""
    if reason := _config_refusal(request):
        raise _unavailable(request, reason)
    config = request.config
    headers: dict[str, str] = {}
    if secret_ref := config.get("secret_ref"):
        headers["Authorization"] = f"Bearer {settings.TOOLHUB_SECRETS[secret_ref]}"
    if config.get("url"):
        base_url = str(config["url"])
    elif config.get("url_setting"):
        base_url = str(getattr(settings, config["url_setting"]))
    else:
        return _upstream_endpoint(request, str(config.get("upstream")))
    return Endpoint(base_url=base_url.rstrip("/"), headers=headers, query={})


def _upstream_endpoint(request: ExecutionRequest, name: str) -> Endpoint:
    """The named upstream, as the tool's owner sees it (a shared tool: the platform's only),
    with its credential for this session's end user. Refusals are the upstream app's errors:
    `unavailable` (no such upstream, an unreadable credential) or `forbidden` (the user has
    not connected their account); nothing is sent."""
    try:
        owner = None if request.platform_owned else request.tenant_id
        upstream = upstream_for_call(
            tenant_id=owner, name=name, subject=request.subject, agent_id=request.agent_id,
            generation=request.upstream_generation,
        )
    except (UpstreamNotFound, SubjectCredentialMissing) as exc:
        logger.warning(
            "%s v%s refused, nothing sent: %s", request.tool_name, request.version_number, exc.message
        )
        raise ExecutionRejected(exc) from None
    return Endpoint(
        base_url=upstream.base_url.rstrip("/"), headers=upstream.auth_headers, query=upstream.auth_query
    )


def _outgoing(request: ExecutionRequest, parts: RequestParts, endpoint: Endpoint) -> httpx2.Request:
    """The request to send; the endpoint's credentials win over a mapped header or query
    parameter of the same name. The query (pairs the mapping has percent-encoded already) is
    appended to one the path may already have; the body goes as the mapping wrote its bytes."""
    headers = httpx2.Headers(_BASE_HEADERS)
    headers.update(parts.headers)
    if parts.content_type:
        headers["Content-Type"] = parts.content_type
    headers.update(endpoint.headers)
    credentials = [(quote(k, safe=""), quote(v, safe="")) for k, v in endpoint.query.items()]
    taken = {k for k, _ in credentials}
    query = [*credentials, *((k, v) for k, v in parts.query if k not in taken)]
    url = endpoint.base_url + parts.path
    if query:
        url += ("&" if "?" in url else "?") + "&".join(f"{k}={v}" for k, v in query)
    outgoing = httpx2.Request(
        parts.method, url, headers=headers, content=parts.content,
        extensions={"timeout": _timeout(request.timeout_s).as_dict()},
    )
    if reason := _off_base(endpoint.base_url, parts.path, outgoing.url):
        raise _unavailable(request, reason)
    return outgoing


def _off_base(base_url: str, path: str, url: httpx2.URL) -> str | None:
    """Why the request built from `path` would not go under `base_url`, or None. Saving refuses
    such paths; this catches a row stored before the rule, or changed by SQL, before the
    credentials it carries leave: the same scheme, userinfo, host and port, and a path under
    the base's (httpx has already resolved '..' when it parsed the URL, so dots are judged in
    `path` as filled)."""
    base, base_path = _parsed_base(base_url)
    if (url.scheme, url.userinfo, url.host, url.port) != (base.scheme, base.userinfo, base.host, base.port):
        return (
            f"its path leads to {url.host}:{url.port or _default_port(url)}, not to its upstream's "
            f"{base.host}:{base.port or _default_port(base)}"
        )
    if problems := path_problems(path):
        return f"its path would leave its upstream's base URL ({'; '.join(problems)})"
    sent_path = url.raw_path.partition(b"?")[0]
    if sent_path != base_path and not sent_path.startswith(base_path + b"/"):
        return f"its path leads out of its upstream's base path {base_path.decode()!r}"
    return None


@lru_cache(maxsize=256)
def _parsed_base(base_url: str) -> tuple[httpx2.URL, bytes]:
    """A base URL as parsed, and its path without query or trailing slash: a pure function of
    the text, so it is parsed once."""
    base = httpx2.URL(base_url)
    return base, base.raw_path.partition(b"?")[0].rstrip(b"/")


def _default_port(url: httpx2.URL) -> int:
    return 443 if url.scheme == "https" else 80


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


def _rejection(response: httpx2.Response, request: ExecutionRequest, endpoint: Endpoint) -> ExecutionRejected:
    """A 4xx answer: the upstream refused the request, so nothing was applied. What it said is
    read by upstream_errors.py, in its own words, as data."""
    content_type = response.headers.get("content-type", "")
    try:
        body: Any = response.json()
    except ValueError:
        # A plain-text refusal is quoted as it is; an HTML error page says nothing to a model.
        body = response.text if content_type.startswith("text/plain") else None
    answer = ErrorAnswer(response.status_code, content_type, body, response.headers)
    wire = wire_names(request.config)
    return ExecutionRejected(
        refusal(answer, tool=request.tool_name, hidden=endpoint.hidden, wire=wire, now=time.time())
    )


def run_http(request: ExecutionRequest) -> Any:
    endpoint = _endpoint(request)
    try:
        parts = request_parts(request.config, request.arguments, idempotency_key=request.idempotency_key)
    except InvalidArgsError as exc:
        raise ExecutionRejected(exc) from None
    try:
        outgoing = _outgoing(request, parts, endpoint)
    except (httpx2.InvalidURL, UnicodeError) as exc:
        # Nothing has left yet: a URL httpx cannot parse, a header value that is not ASCII.
        raise ExecutionNotSent(
            f"the request to {request.tool_name}'s provider could not be built: {type(exc).__name__}"
        ) from None
    try:
        response = _exchange(request, outgoing)
    except EgressRefused as exc:
        raise _unavailable(request, exc.reason) from None
    except ResponseTooLarge as exc:
        raise AnswerTooLarge(exc.limit) from None
    except (httpx2.UnsupportedProtocol, httpx2.ConnectError, httpx2.ConnectTimeout,
            httpx2.PoolTimeout) as exc:
        # Raised before a byte is written: no http(s) scheme, DNS failure, connection refused.
        raise ExecutionNotSent(
            f"could not connect to {request.tool_name}'s provider: {type(exc).__name__}"
        ) from None
    except httpx2.TimeoutException:
        raise ExecutionTimedOut(
            f"no complete answer from {request.tool_name}'s provider within {request.timeout_s} s"
        ) from None
    except httpx2.TransportError as exc:
        raise ExecutionAmbiguous(
            f"the connection failed after sending: {type(exc).__name__} ({exc})"
        ) from None
    if 400 <= response.status_code < 500:
        raise _rejection(response, request, endpoint)
    if response.status_code >= 500 or not response.is_success:
        raise ExecutionAmbiguous(f"the provider answered HTTP {response.status_code}")
    if response.status_code == 204 or parts.method == "HEAD":
        return None
    try:
        return selected_response(request.config, endpoint.hidden_in(response.json(), response.content))
    except ResponseShapeError as exc:
        # A success that is not shaped as the version says: for a write, it may have happened.
        raise ExecutionAmbiguous(f"the provider answered success, but {exc}") from None
    except ValueError:
        raise ExecutionAmbiguous("the provider answered success with a body that is not JSON") from None


def reconcile_http(request: ExecutionRequest) -> ReconcileAnswer:
    """Ask the provider's status endpoint whether the request with this key was applied."""
    if not request.config.get("status_path") or not request.idempotency_key:
        return ReconcileAnswer(found=None, note="this tool has no status endpoint to ask", retry=False)
    try:
        endpoint = _endpoint(request)
    except ExecutionRejected as exc:
        return ReconcileAnswer(found=None, note=f"not asked: {exc.error.message}", retry=False)
    parts = status_parts(request.config, idempotency_key=request.idempotency_key)
    try:
        response = _exchange(request, _outgoing(request, parts, endpoint))
    except ExecutionRejected as exc:
        return ReconcileAnswer(found=None, note=f"not asked: {exc.error.message}", retry=False)
    except EgressRefused as exc:
        return ReconcileAnswer(found=None, note=f"not asked, egress policy: {exc.reason}", retry=False)
    except ResponseTooLarge as exc:
        return ReconcileAnswer(found=None, note=f"status endpoint answered, but {exc}", retry=False)
    except httpx2.InvalidURL:
        return ReconcileAnswer(found=None, note="not asked: the status URL is not a valid URL", retry=False)
    except httpx2.TimeoutException:
        return ReconcileAnswer(
            found=None, note=f"status endpoint did not answer within {request.timeout_s} s"
        )
    except httpx2.HTTPError as exc:
        return ReconcileAnswer(found=None, note=f"status endpoint unreachable: {type(exc).__name__}")
    if response.status_code == 404:
        return ReconcileAnswer(found=False, note="the provider has no request with this key")
    if response.status_code != 200:
        return ReconcileAnswer(found=None, note=f"status endpoint answered HTTP {response.status_code}")
    try:
        result = selected_response(request.config, endpoint.hidden_in(response.json(), response.content))
    except ResponseShapeError as exc:
        return ReconcileAnswer(found=None, note=f"status endpoint answered, but {exc}")
    except ValueError:
        return ReconcileAnswer(found=None, note="status endpoint answered a body that is not JSON")
    return ReconcileAnswer(found=True, result=result, note="found at the provider")
