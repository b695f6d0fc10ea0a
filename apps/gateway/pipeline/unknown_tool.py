"""The `unknown_tool` error: what to call instead when a model asks for a tool it cannot see.

Its hint names the closest visible tools, or the toolsets and phases that offer the tool
when the agent may call it elsewhere, and always the way out (`request_capability`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from apps.common.builtin_tools import REQUEST_CAPABILITY
from apps.common.errors import UnknownToolError
from apps.gateway.agent_catalogs import ToolPlace
from apps.gateway.text import clip, join_names

__all__ = ["ToolPlace", "closest_tools", "unknown_tool_error"]

MAX_SUGGESTIONS = 3
MAX_NAME_COMPARED = 128
_MIN_NAME_SIMILARITY = 0.55
# Verbs and fillers every tool name has; sharing them says nothing about fit.
_STOP_WORDS = frozenset(
    {
        "get",
        "set",
        "list",
        "find",
        "fetch",
        "the",
        "and",
        "for",
        "with",
        "from",
        "all",
        "tool",
        "api",
        "data",
        "info",
        "this",
        "that",
        "any",
        "one",
        "not",
    }
)


def _words(text: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    words: set[str] = set()
    for word in re.findall(r"[a-z0-9]+", spaced.lower()):
        if len(word) >= 3 and word not in _STOP_WORDS:
            # Crude singular form, so "orders" meets "order".
            words.add(word[:-1] if word.endswith("s") and len(word) > 3 else word)
    return words


def closest_tools(name: str, visible: Sequence[tuple[str, str]], limit: int = MAX_SUGGESTIONS) -> list[str]:
    """Up to `limit` visible tool names closest to `name` by spelling or by the words they share."""
    # Tool names are at most 64 characters; a longer request cannot be close by spelling.
    name = name[:MAX_NAME_COMPARED].lower()
    wanted = _words(name)
    scored: list[tuple[float, str]] = []
    for tool, description in visible:
        if tool == REQUEST_CAPABILITY:
            continue
        similarity = difflib.SequenceMatcher(None, name, tool.lower()).ratio()
        overlap = len(wanted & (_words(tool) | _words(description))) / len(wanted) if wanted else 0.0
        if similarity >= _MIN_NAME_SIMILARITY or overlap > 0:
            scored.append((max(similarity, overlap) + 0.1 * min(similarity, overlap), tool))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [tool for _, tool in scored[:limit]]


def unknown_tool_error(
    name: str, visible: Sequence[tuple[str, str]], *, elsewhere: Sequence[ToolPlace] = ()
) -> UnknownToolError:
    """The error for a call of a tool that is not visible to this agent in this phase.

    `elsewhere` names the toolsets and phases where the agent may call it after all (only
    places it may see): the hint then says where to go rather than that nothing is close.
    """
    suggestions = closest_tools(name, visible)
    way_out = (
        f"If none fits, call {REQUEST_CAPABILITY} to tell the operators what you need, "
        "and tell the user you cannot do it yet."
    )
    if elsewhere:
        first = elsewhere[0]
        move = f'send "toolset": "{first.toolset}"' + (f', "phase": "{first.phase}"' if first.phase else "")
        here = f" The closest tools here: {join_names(suggestions)}." if suggestions else ""
        hint = (
            f"{clip(name, 64)} is available in {' or '.join(str(p) for p in elsewhere[:MAX_SUGGESTIONS])}; "
            f"it cannot be called here. Call it once the task has reached that step "
            f"({move}).{here} If this step needs it, call {REQUEST_CAPABILITY}: it opens the tool to "
            "this task when it may be opened here, and says why not otherwise."
        )
    elif suggestions:
        hint = f"Use one of the closest available tools: {join_names(suggestions)}. {way_out}"
    else:
        hint = f"No available tool is close to this name; use only names from your tool list. {way_out}"
    extra: dict[str, object] = {"suggestions": suggestions}
    if elsewhere:
        extra["available_in"] = [p.as_dict() for p in elsewhere[:MAX_SUGGESTIONS]]
    return UnknownToolError(
        f'The tool "{clip(name, 64)}" is not available here.',
        hint=hint,
        extra=extra,
    )
