"""RFC 6901 JSON pointers: one token escaped (`~` as `~0`, `/` as `~1`) and read back, and a
path of keys and indexes as a pointer. Pure."""

from __future__ import annotations

from collections.abc import Iterable


def escaped(token: object) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def unescaped(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def pointer(parts: Iterable[object]) -> str:
    """The pointer of a path ("" for the whole document)."""
    return "".join("/" + escaped(part) for part in parts)
