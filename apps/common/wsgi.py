"""WSGI middleware around Django's application (toolhub/wsgi.py): request bodies read up front."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings

WsgiApplication = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def is_chunked(transfer_encoding: str) -> bool:
    """Whether a Transfer-Encoding value ends with chunked: the body's length is unknown."""
    return transfer_encoding.rsplit(",", 1)[-1].strip().lower() == "chunked"


def over_the_limit(length: int) -> bool:
    limit: int | None = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return limit is not None and length > limit


def body_left_unread(*, content_length: int | None, transfer_encoding: str) -> bool:
    """Whether RequestBodyReader may leave part of this body unread: declared over the
    limit (never read), or chunked (read only up to the limit)."""
    if content_length is None:
        return is_chunked(transfer_encoding)
    return over_the_limit(content_length)


class RequestBodyReader:
    """Reads each request body, up to the size limit, before Django sees the request.

    - A chunked body (`Transfer-Encoding: chunked`, no Content-Length) reached the views
      empty: Django reads CONTENT_LENGTH bytes and nothing without one. Read here, it is
      handed on with its length. One byte past the limit is enough to know it is too big:
      the request then declares that length, and Django refuses it with the same 413 as a
      body whose declared length is over the limit.
    - A body an answer does not need (401, 429, 503 come before the body is parsed) is
      read too, so the connection can serve the client's next request: gunicorn drains at
      most 64 KiB of an unread body and otherwise drops the connection it promised to keep.

    A body declared over the limit is left unread; gunicorn.conf.py closes its connection.
    Only under a server that ends `wsgi.input` with the body (`wsgi.input_terminated`, as
    gunicorn does): elsewhere reading to its end could wait for the client's next request.
    The limit is TOOLHUB_MAX_BODY_BYTES (Django's DATA_UPLOAD_MAX_MEMORY_SIZE).
    """

    def __init__(self, application: WsgiApplication) -> None:
        self.application = application

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("wsgi.input_terminated"):
            self._read_body(environ)
        return self.application(environ, start_response)

    @staticmethod
    def _read_body(environ: dict[str, Any]) -> None:
        length = environ.get("CONTENT_LENGTH", "")
        if length:
            if not length.isdigit() or int(length) == 0 or over_the_limit(int(length)):
                return  # nothing to read, or over the limit: Django answers 413 unread
            size = int(length)
        elif is_chunked(environ.get("HTTP_TRANSFER_ENCODING", "")):
            limit: int | None = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            size = -1 if limit is None else limit + 1
        else:
            return
        body = environ["wsgi.input"].read(size)
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
