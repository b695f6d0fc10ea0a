"""WSGI middleware around Django's application (toolhub/wsgi.py): every request body bounded.

Each body is read within a size limit and a deadline (apps/common/request_body.py), on
every path:

- The agent API and `/mcp` read it on demand, after the agent's key is checked: a request
  without a valid key answers 401 without its body being read.
- Elsewhere (the admin, the demo upstream) it is read before Django sees the request, within
  the admin's larger limit under `/admin/`; what went wrong (too large, too slow, cut) is
  answered by BodyRefusalMiddleware (apps/common/middleware.py).
- When the answer is ready and part of the body is still unread, the connection is closed
  (`Connection: close`): gunicorn would otherwise wait for it, on a thread, to keep the
  connection.

This bounds what one slow client costs; it does not make a thread per request cheap. In
front of the server a buffering proxy is still needed (docs/operations.md, "Deployment").
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings

from .request_body import BodyCut, BodyReadTimeout, BodyTooLarge, BoundedBody

WsgiApplication = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# Paths whose views authenticate the agent before they read the body.
AGENT_PATH_PREFIXES = ("/api/", "/mcp")
ADMIN_PATH_PREFIX = "/admin/"
# Where the middleware finds the refusal of a body read before Django saw the request.
BODY_REFUSAL_KEY = "toolhub.body_refusal"


def is_chunked(transfer_encoding: str) -> bool:
    """Whether a Transfer-Encoding value ends with chunked: the body's length is unknown."""
    return transfer_encoding.rsplit(",", 1)[-1].strip().lower() == "chunked"


def body_limit(path: str) -> tuple[int, str]:
    """The largest body a path takes, with the setting that says so."""
    if path.startswith(ADMIN_PATH_PREFIX):
        return settings.TOOLHUB_ADMIN_MAX_BODY_BYTES, "TOOLHUB_ADMIN_MAX_BODY_BYTES"
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE, "TOOLHUB_MAX_BODY_BYTES"


class RequestBodyReader:
    """Puts a BoundedBody in `wsgi.input` (see the module's docstring).

    Only under a server that ends `wsgi.input` with the body (`wsgi.input_terminated`, as
    gunicorn does): elsewhere reading a chunked body to its end could wait for the client's
    next request. A chunked body has no length, and Django and DRF read a body only when it
    declares one: it declares the limit, a ceiling; it ends where its last chunk does.
    """

    def __init__(self, application: WsgiApplication) -> None:
        self.application = application

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = self._bounded_body(environ) if environ.get("wsgi.input_terminated") else None
        if body is None:
            return self.application(environ, start_response)
        path = environ.get("PATH_INFO", "")
        if path.startswith(AGENT_PATH_PREFIXES):
            environ["wsgi.input"] = body
            if body.declared is None:
                environ["CONTENT_LENGTH"] = str(body.limit)
        else:
            self._read_before_django(environ, body)

        def start_response_settled(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            body.settle()
            if not body.complete:
                _close_after_response(start_response)
            return start_response(status, headers, exc_info)

        return self.application(environ, start_response_settled)

    @staticmethod
    def _bounded_body(environ: dict[str, Any]) -> BoundedBody | None:
        length = environ.get("CONTENT_LENGTH", "")
        if length:
            if not length.isdigit() or int(length) == 0:
                return None
            declared: int | None = int(length)
        elif is_chunked(environ.get("HTTP_TRANSFER_ENCODING", "")):
            declared = None
        else:
            return None
        limit, setting = body_limit(environ.get("PATH_INFO", ""))
        # Under HTTP/2 the socket carries other requests too: no deadline may shut it.
        http1 = environ.get("SERVER_PROTOCOL", "").startswith("HTTP/1.")
        return BoundedBody(
            environ["wsgi.input"],
            declared=declared,
            limit=limit,
            setting=setting,
            sock=environ.get("gunicorn.socket") if http1 else None,
            timeout_s=settings.TOOLHUB_BODY_READ_TIMEOUT_S,
        )

    @staticmethod
    def _read_before_django(environ: dict[str, Any], body: BoundedBody) -> None:
        try:
            data = body.read_all()
        except (BodyTooLarge, BodyReadTimeout, BodyCut) as refusal:
            environ[BODY_REFUSAL_KEY] = refusal
            data = b""
        environ["wsgi.input"] = io.BytesIO(data)
        environ["CONTENT_LENGTH"] = str(len(data))


def _close_after_response(start_response: Callable[..., Any]) -> None:
    """Answer `Connection: close`: gunicorn's response (the object whose method
    start_response is) closes when told to; other servers are left to their own rules."""
    force_close = getattr(getattr(start_response, "__self__", None), "force_close", None)
    if force_close is not None:
        force_close()
