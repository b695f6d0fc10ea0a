"""What the current unit of work is: the HTTP request id, or the Celery task id.

Context variables, so every log record written while a request or a task runs can name
it (apps.common.logs.RequestContextFilter). Work handed to a thread pool keeps them only
when submitted through `in_current_context`: a plain `submit` starts with an empty context.
"""

from __future__ import annotations

import contextvars
import re
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

REQUEST_ID_HEADER = "X-Request-ID"
# A caller's id is kept when it is short and made of characters that cannot forge log
# lines or headers; anything else is replaced by a fresh one.
_VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")

_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("toolhub_request_id", default=None)
_task_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("toolhub_task_id", default=None)

T = TypeVar("T")


def request_id_from(header_value: str | None) -> str:
    """The caller's request id when it is safe to repeat, otherwise a new one."""
    if header_value and _VALID_REQUEST_ID.fullmatch(header_value):
        return header_value
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    return _request_id.get()


def current_task_id() -> str | None:
    return _task_id.get()


def bind_request_id(request_id: str | None) -> None:
    """Set by RequestIdMiddleware; cleared (None) when Django signals request_finished."""
    _request_id.set(request_id)


def bind_task_id(task_id: str | None) -> None:
    """Set by the Celery task_prerun hook; cleared (None) by task_postrun."""
    _task_id.set(task_id)


def in_current_context(func: Callable[..., T]) -> Callable[..., T]:
    """`func` bound to a copy of the caller's context, to run on another thread."""
    context = contextvars.copy_context()

    def run(*args: Any, **kwargs: Any) -> T:
        return context.run(func, *args, **kwargs)

    return run
