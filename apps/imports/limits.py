"""How much one import may cost, and the refusal when it would cost more.

A document is written by others (docs/principles.md 18): a few kilobytes of `$ref`s can
expand to gigabytes, and ten thousand operations held one transaction for a quarter of an
hour. Each bound is a setting; a refusal names the limit, its setting and where in the
document it was hit, and nothing of the import is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.conf import settings

from .errors import DocumentProblem


@dataclass(frozen=True)
class ImportLimits:
    """The bounds of one import (settings TOOLHUB_IMPORT_MAX_*)."""

    # Nesting of the document as written, and of an operation's schemas with `$ref`s expanded.
    max_depth: int
    # JSON values (objects, arrays, scalars) of one operation or tool with `$ref`s expanded.
    max_schema_nodes: int
    # The same, of all the operations of one import together: what it stores.
    max_import_nodes: int
    # Operations (or MCP tools) one import makes drafts of.
    max_operations: int
    # Seconds from reading the document to the last draft.
    max_seconds: float
    # Bytes of the document as uploaded, read or fetched.
    max_document_bytes: int

    @classmethod
    def from_settings(cls) -> ImportLimits:
        return cls(
            max_depth=settings.TOOLHUB_IMPORT_MAX_DEPTH,
            max_schema_nodes=settings.TOOLHUB_IMPORT_MAX_SCHEMA_NODES,
            max_import_nodes=settings.TOOLHUB_IMPORT_MAX_IMPORT_NODES,
            max_operations=settings.TOOLHUB_IMPORT_MAX_OPERATIONS,
            max_seconds=settings.TOOLHUB_IMPORT_MAX_SECONDS,
            max_document_bytes=settings.TOOLHUB_IMPORT_MAX_DOCUMENT_BYTES,
        )

    def check_document_size(self, size: int, what: str = "The document") -> None:
        """Raise ImportLimitExceeded when a document of `size` bytes is past the limit."""
        if size > self.max_document_bytes:
            raise ImportLimitExceeded("", too_large(what, size, self.max_document_bytes))


class ImportLimitExceeded(DocumentProblem):
    """The import would cost more than a limit allows, at `where`; `problem` names the limit
    and its setting."""


def too_large(what: str, size: int | None, limit: int) -> str:
    has = f" has {size} bytes," if size is not None else " is"
    return (
        f"{what}{has} larger than the {limit} bytes an import reads (TOOLHUB_IMPORT_MAX_DOCUMENT_BYTES); "
        "an operator can raise the setting."
    )


def too_deep(limit: int) -> str:
    return f"nested deeper than {limit} levels (TOOLHUB_IMPORT_MAX_DEPTH)."


def too_many_import_nodes(limit: int) -> str:
    return (
        f"the operations up to this one, with their $refs expanded, have more than {limit} nodes "
        "together (TOOLHUB_IMPORT_MAX_IMPORT_NODES); import fewer operations at a time "
        "(--operations, or the form's operations field)."
    )


def too_many_nodes(limit: int) -> str:
    return (
        f"its schemas, with their $refs expanded, have more than {limit} nodes "
        "(TOOLHUB_IMPORT_MAX_SCHEMA_NODES); a $ref is copied wherever it is used, so a schema "
        "used twice in each of a few levels grows exponentially."
    )


@dataclass
class Clock:
    """The time one import has left. `check` is cheap enough to call for every node."""

    limits: ImportLimits
    started: float = field(default_factory=time.monotonic)
    _calls: int = 0

    def check(self, where: str, *, every: int = 1) -> None:
        """Raise ImportLimitExceeded naming `where` once the import is past its time; with
        `every`, look at the clock only on every that many calls."""
        self._calls += 1
        if self._calls % every:
            return
        if time.monotonic() - self.started >= self.limits.max_seconds:
            raise ImportLimitExceeded(
                where,
                f"the import took longer than {self.limits.max_seconds:g} s (TOOLHUB_IMPORT_MAX_SECONDS) "
                "and stopped here; import fewer operations at a time (--operations, or the form's "
                "operations field).",
            )
