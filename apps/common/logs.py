"""Structured logs: one JSON object per line, each naming its request or Celery task.

`RequestContextFilter` (on the handler, so it sees every logger's records) adds
`request_id` and `task_id`; `JsonFormatter` writes the record with python-json-logger and
`PlainFormatter` writes a line for people (LOG_FORMAT=plain). Both scrub credentials from
the final text as a last line of defence: no code logs headers on purpose, and a
formatter is the one place every line passes through.
"""

from __future__ import annotations

import logging
import logging.config
import re
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _LibraryJsonFormatter

from .request_context import current_request_id, current_task_id

REDACTED = "[redacted]"
_SECRETS = [
    # A dumped header or META entry of the two credentials the agent API receives: the
    # whole value, whatever its scheme.
    (
        re.compile(
            r"(?i)((?:http_)?(?:authorization|x[-_]toolhub[-_]session)['\"]?\s*[:=]\s*['\"]?)[^'\"\n,}]+"
        ),
        rf"\1{REDACTED}",
    ),
    # Any bearer credential elsewhere: agent keys, upstream API keys, the metrics token.
    (re.compile(r"(?i)\b(bearer)(\s+|%20)[^\s\"',;}\]]+"), rf"\1\2{REDACTED}"),
    # Agent keys are `thk_<public prefix>_<secret>`; the prefix may stay, the secret may not.
    (re.compile(r"\b(thk_[A-Za-z0-9]+_)[A-Za-z0-9_-]+"), rf"\1{REDACTED}"),
    # Session tokens anywhere: Django-signed values, `payload:timestamp:signature` (SHA-256).
    (re.compile(r"(?<![\w.-])\.?[\w-]{8,}:[A-Za-z0-9]{4,8}:[\w-]{43}(?![\w-])"), REDACTED),
]


def redact(text: str) -> str:
    """`text` with every credential it contains replaced by [redacted]."""
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


class RequestContextFilter(logging.Filter):
    """Adds the id of the current HTTP request and Celery task to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id()
        record.task_id = current_task_id()
        return True


class JsonFormatter(_LibraryJsonFormatter):
    """`{"time", "level", "logger", "message", "request_id", "task_id", ...extra}` per line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("timestamp", "time")
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        super().__init__("%(levelname)s %(name)s %(message)s", *args, **kwargs)

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict) -> None:
        super().add_fields(log_data, record, message_dict)
        # Django's request logger passes the request object: its repr is all we want of it.
        if "request" in log_data:
            log_data["request"] = repr(log_data["request"])

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class PlainFormatter(logging.Formatter):
    """A line for people, with the same ids and the same scrubbing."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(request_id)s %(task_id)s] %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def logging_config(*, level: str, fmt: str) -> dict[str, Any]:
    """The dictConfig of every ToolHub process: web (Django, gunicorn), worker and beat."""
    formatter = "plain" if fmt == "plain" else "json"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": "apps.common.logs.RequestContextFilter"}},
        "formatters": {
            "json": {"()": "apps.common.logs.JsonFormatter"},
            "plain": {"()": "apps.common.logs.PlainFormatter"},
        },
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": formatter, "filters": ["context"]},
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # Gunicorn's own lines in the same format; its access log is off because
            # RequestIdMiddleware writes one line per request, with the request id.
            "gunicorn.error": {"handlers": ["console"], "level": level, "propagate": False},
            "gunicorn.access": {"handlers": [], "propagate": False},
            # Django's default configuration gives its loggers their own plain console
            # handler and level INFO: send them through ours, at the level asked for.
            "django": {"handlers": [], "level": level, "propagate": True},
        },
    }


def celery_setup_logging(*, loglevel: int | str | None, config: dict[str, Any]) -> None:
    """Celery's setup_logging hook: keep Django's configuration instead of Celery's own.

    Connecting the hook is how Celery is told to leave logging alone; the worker's
    `--loglevel` still decides the root level.
    """
    logging.config.dictConfig(config)
    if loglevel:
        logging.getLogger().setLevel(loglevel)
