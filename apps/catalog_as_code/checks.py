"""How a catalog document's problems are found and told: each at the YAML path of the
offending value. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError


@dataclass(frozen=True)
class Problem:
    """Why a document cannot be applied, at the YAML path of the offending value."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class DocumentError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def problems_of(path: str, error: ValidationError) -> list[Problem]:
    """A model or service ValidationError as problems, each field under `path`."""
    if hasattr(error, "error_dict"):
        return [
            Problem(path if name == "__all__" else f"{path}.{name}", message)
            for name, messages in error.message_dict.items()
            for message in messages
        ]
    return [Problem(path, message) for message in error.messages]


def expect(value: Any, kind: type, path: str, what: str, problems: list[Problem]) -> bool:
    if isinstance(value, kind):
        return True
    problems.append(Problem(path, f"expected {what}, found {type(value).__name__}: {value!r}."))
    return False


def unknown_keys(
    entry: Mapping[str, Any], allowed: Iterable[str], path: str, problems: list[Problem]
) -> None:
    allowed = tuple(allowed)
    for key in sorted(set(entry) - set(allowed), key=str):
        problems.append(Problem(f"{path}.{key}", f"unknown key; allowed: {', '.join(allowed)}."))
