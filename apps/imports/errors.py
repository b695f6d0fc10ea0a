"""Why an import did not happen. Nothing of it was written."""

from __future__ import annotations


class ImportRefused(Exception):
    """The import cannot be made as asked (a document that cannot be fetched, an unknown
    operation or agent, a draft that cannot be published); the message says what to change."""


class DocumentProblem(ImportRefused):
    """What is wrong at `where` of a document ToolHub reads: a JSON pointer, or a line."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where or '(document)'}: {problem}")
        self.where = where
        self.problem = problem


class OpenAPIError(DocumentProblem):
    """The document is not an OpenAPI 3.0 or 3.1 document ToolHub can read, at `where`."""


class Unsupported(Exception):
    """An operation (or listed tool) ToolHub cannot map onto a tool; the reason, for the
    curator. The import goes on without it."""
