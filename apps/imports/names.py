"""The names an import gives new tools. Pure.

A tool's name is the snake_case of its operationId (or of its method and path, or of an MCP
tool's name). One that is longer than a tool name may be, or already taken in the tenant
(by another tool, one this import made, or a tool ToolHub itself offers), is cut to fit
and ends in a short digest of the operation's key: readable, the same at every import of
the same document, and never a number that says which came first (`_2`). Each such name
comes with the reason, for the import's report.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from apps.common.builtin_tools import BUILTIN_TOOL_NAMES

MAX_NAME = 64
# Hex digits of the key's digest a changed name ends in; more only if that name is taken too.
DIGEST_CHARS = 6
# Argument names as every model API takes them; another wire name becomes snake_case.
_SAFE_ARGUMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Comparison suffixes of filter parameters (Twilio's `DateSent<`), in words.
_OPERATOR_WORDS = (("<=", " on or before "), (">=", " on or after "), ("<", " before "), (">", " after "),
                   ("[]", " "))


def snake_name(text: str) -> str:
    """`text` (an operationId, a method and path, a header name) in snake_case, uncut."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    name = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "operation"
    return name if name[0].isalpha() else f"op_{name}"


def argument_name(wire_name: str) -> str:
    """The argument a parameter's wire name becomes: the name itself when it is a safe one,
    else readable snake_case (Twilio's `DateSent<` is `date_sent_before`, `ids[]` is `ids`)."""
    if _SAFE_ARGUMENT.fullmatch(wire_name):
        return wire_name
    for operator, words in _OPERATOR_WORDS:
        wire_name = wire_name.replace(operator, words)
    return snake_name(wire_name)


@dataclass(frozen=True)
class ToolName:
    name: str
    note: str  # why the name is not the snake_case one; "" when it is


def tool_name(wanted: str, *, key: str, taken: set[str]) -> ToolName:
    """The name of a new tool made from the operation (or listed tool) `key`, whose
    snake_case name is `wanted`: `wanted` when it fits and none of `taken` has it, else
    `wanted` cut to fit with `_` and the first hex digits of `key`'s SHA-256. `taken`
    gets the name."""
    if len(wanted) > MAX_NAME:
        reason = f"{wanted} has {len(wanted)} characters, a tool name at most {MAX_NAME}"
    elif wanted in BUILTIN_TOOL_NAMES:
        reason = f"{wanted} is the name of a tool ToolHub itself offers every agent"
    elif wanted in taken:
        reason = f"another tool is already named {wanted}"
    else:
        taken.add(wanted)
        return ToolName(name=wanted, note="")
    digest = hashlib.sha256(key.encode()).hexdigest()
    for length in range(DIGEST_CHARS, len(digest) + 1):
        suffix = f"_{digest[:length]}"
        name = wanted[: MAX_NAME - len(suffix)].rstrip("_") + suffix
        if name not in taken:
            break
    taken.add(name)
    return ToolName(name=name, note=f"named {name}: {reason}")
