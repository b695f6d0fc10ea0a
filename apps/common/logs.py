"""Structured logs: one JSON object per line, each naming its request or Celery task.

`RequestContextFilter` (on the handler, so it sees every logger's records) adds
`request_id` and `task_id`; `RoutineFilter` moves routine lines (a process started or
stopped, beat's periodic round, a probe) to their own level; `JsonFormatter` writes the
record with python-json-logger and `PlainFormatter` writes one line for people
(LOG_FORMAT=plain). Both scrub credentials from the final text as a last line of defence:
no code logs headers on purpose, and a formatter is the one place every line passes through
(values of query parameters named like credentials, `api_key=`, `access_token=`, are among
what they scrub). `QueryValuesFilter`, on the loggers of the HTTP clients and of the MCP
SDK's client, replaces every query value of every URL a record carries, whatever the
parameter is called (an upstream's credential of kind `query` may be named anything), before
any handler (or test capture) sees the record; on the handler too, for their other loggers.
"""

from __future__ import annotations

import functools
import logging
import logging.config
import re
import sys
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _LibraryJsonFormatter

from .request_context import current_request_id, current_task_id

REDACTED = "[redacted]"


@dataclass(frozen=True)
class _Secret:
    """A credential as it shows in text, and what it is replaced with. `may_be_in(text,
    lowered)` is true whenever `pattern` can match: a substring search, far cheaper than the
    pattern, which most lines (the access log's, one a request) then skip. `lowered` is the
    text lower-cased when it is ASCII, None otherwise: only on ASCII text does ignoring case
    come down to lower-casing (IGNORECASE also takes a few other letters for ASCII ones)."""

    pattern: re.Pattern[str]
    replacement: str
    may_be_in: Callable[[str, str | None], bool]


def _words(*words: str) -> Callable[[str, str | None], bool]:
    """For a pattern that ignores case: one of `words` (lower case) is in the text."""
    return lambda text, lowered: lowered is None or any(word in lowered for word in words)


# A session token's timestamp between its colons: what every match of its pattern holds.
_SIGNED_TIMESTAMP = re.compile(r":[A-Za-z0-9]{4,8}:")

_SECRETS = [
    # A dumped header or META entry of the two credentials the agent API receives: the
    # whole value, whatever its scheme.
    _Secret(
        re.compile(
            r"(?i)((?:http_)?(?:authorization|x[-_]toolhub[-_]session)['\"]?\s*[:=]\s*['\"]?)[^'\"\n,}]+"
        ),
        rf"\1{REDACTED}",
        _words("authorization", "session"),
    ),
    # Any bearer credential elsewhere: agent keys, upstream API keys, the metrics token.
    _Secret(re.compile(r"(?i)\b(bearer)(\s+|%20)[^\s\"',;}\]]+"), rf"\1\2{REDACTED}", _words("bearer")),
    # Agent keys are `thk_<public prefix>_<secret>`; the prefix may stay, the secret may not.
    _Secret(re.compile(r"\b(thk_[A-Za-z0-9]+_)[A-Za-z0-9_-]+"), rf"\1{REDACTED}",
            lambda text, lowered: "thk_" in text),
    # Session tokens anywhere: Django-signed values, `payload:timestamp:signature` (SHA-256).
    _Secret(re.compile(r"(?<![\w.-])\.?[\w-]{8,}:[A-Za-z0-9]{4,8}:[\w-]{43}(?![\w-])"), REDACTED,
            lambda text, lowered: _SIGNED_TIMESTAMP.search(text) is not None),
    # A query parameter named like a credential, in a URL logged as text: key=, api_key=,
    # x-api-key=, access_token=, client_secret=, X-Amz-Signature=, password=, …
    _Secret(
        re.compile(
            r"(?i)([?&;](?:[\w.-]*[_.-])?(?:key|apikey|token|secret|password|passwd|pwd|signature|sig|"
            r"auth|credential|credentials|session)=)[^&#\s\"'<>]+"
        ),
        rf"\1{REDACTED}",
        lambda text, lowered: "=" in text,
    ),
]


def redact(text: str) -> str:
    """`text` with every credential it contains replaced by [redacted]."""
    lowered = text.lower() if text.isascii() else None
    for secret in _SECRETS:
        if secret.may_be_in(text, lowered):
            scrubbed = secret.pattern.sub(secret.replacement, text)
            if scrubbed != text:
                text = scrubbed
                lowered = text.lower() if text.isascii() else None
    return text


class RequestContextFilter(logging.Filter):
    """Adds the id of the current HTTP request and Celery task to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id()
        record.task_id = current_task_id()
        return True


# A URL's query string in text: what follows `?` up to the end of the URL.
_URL_QUERY = re.compile(r"(\bhttps?://[^\s?#\"'<>]*\?)([^\s#\"'<>]*)")
_QUERY_VALUE = re.compile(r"([^&;=]*)=[^&;]*")
# The loggers that log the URLs they request: the HTTP clients' (httpx and httpx2 log each
# request; httpcore's trace, urllib3's connection pool) and the MCP SDK's client. A logger's
# filters see only the records logged to it, not to its children, so each is named.
CLIENT_LOGGERS = (
    "httpx", "httpx2",
    *(f"{core}.{part}" for core in ("httpcore", "httpcore2") for part in ("connection", "http11", "http2",
                                                                          "proxy", "socks")),
    "mcp.client.streamable_http", "mcp.client.sse", "mcp.client.client", "mcp.client.auth.oauth2",
    "client",  # the MCP SDK's ClientSession
    "urllib3.connectionpool", "urllib3.poolmanager", "urllib3.connection",
)
_CLIENT_PREFIXES = tuple(sorted({name.split(".")[0] for name in CLIENT_LOGGERS}))


def query_values_hidden(text: str) -> str:
    """`text` with the value of every query parameter of every URL in it replaced by
    [redacted], the names kept."""
    return _URL_QUERY.sub(lambda url: url[1] + _QUERY_VALUE.sub(rf"\1={REDACTED}", url[2]), text)


class QueryValuesFilter(logging.Filter):
    """Replaces the query values of the URLs in a client logger's record (its message, and the
    traceback it carries), keeping the names: the clients log every request's URL, and an
    upstream credential of kind `query` is one of its values."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(_CLIENT_PREFIXES):
            return True
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = str(record.msg)
        record.msg, record.args = query_values_hidden(message), None
        if record.exc_info:
            record.exc_text = query_values_hidden(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


# Lines that only say a process started, connected or stopped, by logger: any INFO line of
# these loggers, or those whose format string starts with one of the prefixes.
_LIFECYCLE_LOGGERS = frozenset({"gunicorn.error", "celery.worker.consumer.mingle", "environ.environ"})
_LIFECYCLE_MESSAGES: dict[str, tuple[str, ...]] = {
    "celery.beat": ("beat: Starting", "Scheduler: Sending due task"),
    "celery.apps.worker": ("%s ready.",),
    "celery.worker.consumer.connection": ("Connected to",),
    # The filesystem broker (`make run`) has no host; kombu warns about it at every connection.
    "kombu.connection": ("No hostname was supplied",),
}
# The worker's received / succeeded lines, routine for the periodic jobs only.
_TASK_LOGGERS = frozenset({"celery.worker.strategy", "celery.app.trace"})
_PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


@functools.cache
def _periodic_tasks() -> frozenset[str]:
    from celery import current_app

    return frozenset(entry["task"] for entry in current_app.conf.beat_schedule.values())


def is_routine(record: logging.LogRecord) -> bool:
    """Whether a line only says that things run as usual: a process started, connected or
    stopped, beat sent a periodic job and the worker ran it, a probe or scrape answered."""
    if record.levelno > logging.WARNING:
        return False
    if record.name in _LIFECYCLE_LOGGERS:
        return record.levelno <= logging.INFO
    if record.name in _LIFECYCLE_MESSAGES:
        return str(record.msg).startswith(_LIFECYCLE_MESSAGES[record.name])
    if record.name in _TASK_LOGGERS:
        task = record.args.get("name") if isinstance(record.args, Mapping) else None
        return record.levelno <= logging.INFO and task in _periodic_tasks()
    if record.name == "toolhub.access":
        return getattr(record, "path", None) in _PROBE_PATHS and getattr(record, "status", 500) < 400
    return False


class RoutineFilter(logging.Filter):
    """Logs routine lines (`is_routine`) at `level`: INFO by default, DEBUG for `make run`,
    whose terminal should show what happens, not that the system is idle."""

    def __init__(self, level: str = "INFO") -> None:
        super().__init__()
        self.level = logging.getLevelName(level.upper())

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == self.level or not is_routine(record):
            return True
        record.levelno, record.levelname = self.level, logging.getLevelName(self.level)
        return logging.getLogger(record.name).isEnabledFor(self.level)


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


_COLOURS = {
    logging.DEBUG: "\033[2m",  # dim
    logging.INFO: "\033[32m",  # green
    logging.WARNING: "\033[33m",  # yellow
    logging.ERROR: "\033[31m",  # red
    logging.CRITICAL: "\033[1;31m",  # bold red
}
_DIM, _RESET = "\033[2m", "\033[0m"


class PlainFormatter(logging.Formatter):
    """One line per record for people: time, level, logger, message, and the request and
    task ids when there are any. A message's line breaks are folded into spaces (Celery's
    and Python's warnings span lines); only a traceback follows its line, indented.
    Colours mark the level when `colour` is on (LOG_COLOR). Scrubbed like the JSON lines."""

    def __init__(self, colour: bool = False) -> None:
        super().__init__(datefmt="%Y-%m-%d %H:%M:%S")
        self.colour = colour

    def format(self, record: logging.LogRecord) -> str:
        message = " ".join(part.strip() for part in record.getMessage().splitlines() if part.strip())
        ids = "".join(
            f" {name}={value}"
            for name in ("request_id", "task_id")
            if (value := getattr(record, name, None))
        )
        level, logger = f"{record.levelname:<7}", record.name
        if self.colour:
            level = f"{_COLOURS.get(record.levelno, '')}{level}{_RESET}"
            logger, ids = f"{_DIM}{logger}{_RESET}", f"{_DIM}{ids}{_RESET}" if ids else ""
        line = f"{self.formatTime(record, self.datefmt)} {level} {logger}: {message}{ids}"
        if record.exc_info:
            line += "\n" + textwrap.indent(self.formatException(record.exc_info), "    ")
        if record.stack_info:
            line += "\n" + textwrap.indent(self.formatStack(record.stack_info), "    ")
        return redact(line)


# Libraries whose INFO lines narrate their own work (each HTTP request, each broker
# connection): noise beside a management command's report.
_LIBRARY_LOGGERS = ("httpx", "httpx2", "httpcore", "kombu", "amqp", "celery", "mcp")


def logging_config(
    *, level: str, fmt: str, colour: bool = False, routine_level: str = "INFO", command: bool = False
) -> dict[str, Any]:
    """The dictConfig of every ToolHub process: web (Django, gunicorn), worker and beat, and
    management commands (`command`: the libraries' lines only from WARNING on)."""
    formatter = "plain" if fmt == "plain" else "json"
    libraries: dict[str, Any] = {name: {"level": "WARNING"} for name in _LIBRARY_LOGGERS} if command else {}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "context": {"()": "apps.common.logs.RequestContextFilter"},
            "routine": {"()": "apps.common.logs.RoutineFilter", "level": routine_level},
            "query_values": {"()": "apps.common.logs.QueryValuesFilter"},
        },
        "formatters": {
            "json": {"()": "apps.common.logs.JsonFormatter"},
            "plain": {"()": "apps.common.logs.PlainFormatter", "colour": colour},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": formatter,
                "filters": ["context", "routine", "query_values"],
            },
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
            **libraries,
            # On the loggers, not only the handler: the record is changed before anything reads it.
            **{
                name: {**libraries.get(name, {}), "filters": ["query_values"], "propagate": True}
                for name in CLIENT_LOGGERS
            },
        },
    }


def logging_config_from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """`logging_config` from LOG_LEVEL, LOG_FORMAT, LOG_COLOR, LOG_ROUTINE_LEVEL and
    LOG_PROFILE.

    LOG_COLOR is `auto` by default: colours when stderr, where the lines go, is a terminal
    and NO_COLOR (no-color.org) is not set. LOG_PROFILE=command (manage.py sets it for its
    commands, runserver aside) makes plain lines the default and keeps the libraries quiet,
    so what a person reads is the command's own report.
    """
    colour = environ.get("LOG_COLOR", "auto").strip().lower()
    command = environ.get("LOG_PROFILE", "") == "command"
    return logging_config(
        level=environ.get("LOG_LEVEL", "INFO"),
        fmt=environ.get("LOG_FORMAT", "plain" if command else "json"),
        command=command,
        colour=(sys.stderr.isatty() and "NO_COLOR" not in environ) if colour == "auto"
        else colour in {"1", "true", "yes", "on"},
        routine_level=environ.get("LOG_ROUTINE_LEVEL", "INFO"),
    )


def celery_setup_logging(*, loglevel: int | str | None, config: dict[str, Any]) -> None:
    """Celery's setup_logging hook: keep Django's configuration instead of Celery's own.

    Connecting the hook is how Celery is told to leave logging alone; the worker's
    `--loglevel` still decides the root level.
    """
    logging.config.dictConfig(config)
    if loglevel:
        logging.getLogger().setLevel(loglevel)
