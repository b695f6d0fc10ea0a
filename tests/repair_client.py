"""A client that repairs a refused call from the envelope's details alone, with no model.

It reads only the data fields of each detail (contract §3), never `hint` or `message`: if
the fields are enough for this client, they are enough for any program.
"""

from __future__ import annotations

import copy
from typing import Any


def _tokens(path: str) -> list[str]:
    return [part.replace("~1", "/").replace("~0", "~") for part in path.split("/")[1:] if path != "/"]


def _container(document: Any, tokens: list[str]) -> tuple[Any, str | int] | None:
    """The object or array holding the place `tokens` names, and its key there."""
    node = document
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    if not tokens:
        return None
    last = tokens[-1]
    return (node, int(last)) if isinstance(node, list) else (node, last)


def _get(document: Any, path: str) -> Any:
    found = _container(document, _tokens(path))
    if found is None:
        return None
    node, key = found
    return node.get(key) if isinstance(node, dict) else node[key]  # type: ignore[index]


def _set(document: Any, path: str, value: Any) -> None:
    found = _container(document, _tokens(path))
    if found is not None:
        node, key = found
        node[key] = value


def _drop(document: Any, path: str) -> None:
    found = _container(document, _tokens(path))
    if found is not None and isinstance(found[0], dict):
        found[0].pop(found[1], None)


def _clamped(value: Any, detail: dict[str, Any]) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in detail and value < detail["minimum"]:
            return detail["minimum"]
        if "maximum" in detail and value > detail["maximum"]:
            return detail["maximum"]
    if isinstance(value, str) and "maxLength" in detail and len(value) > detail["maxLength"]:
        return value[: detail["maxLength"]]
    if isinstance(value, list) and "maxItems" in detail and len(value) > detail["maxItems"]:
        return value[: detail["maxItems"]]
    return value


def apply_repair(arguments: dict[str, Any], envelope: dict[str, Any], *, part: int = 0) -> dict[str, Any]:
    """The arguments with every detail's fix applied; `part` picks the range of a split."""
    repaired = copy.deepcopy(arguments)
    for detail in envelope.get("details", []):
        path = detail["path"]
        if "unexpected" in detail:
            _drop(repaired, detail["unexpected"])
            continue
        if "missing" in detail:
            _set(repaired, detail["missing"], detail.get("default", detail.get("example")))
            continue
        if "swap" in detail:
            first, second = detail["swap"]
            left, right = _get(repaired, first), _get(repaired, second)
            _set(repaired, first, right)
            _set(repaired, second, left)
        if "split" in detail:
            # Absolute values: applying the same split twice (it is on both ends) is harmless.
            for pointer, value in detail["split"][part].items():
                _set(repaired, pointer, value)
            continue
        if "allowed" in detail:
            _set(repaired, path, detail["allowed"][0])
        elif "example" in detail:
            # A bad format, pattern or type, or a bound no clamp meets: a value that passes.
            _set(repaired, path, detail["example"])
        elif "default" in detail:
            _set(repaired, path, detail["default"])
        else:
            _set(repaired, path, _clamped(_get(repaired, path), detail))
    return repaired
