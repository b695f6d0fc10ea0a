"""Descriptions written in HTML (Stripe's `<p>`, `<code>`, `<a href>`) as Markdown. Pure.

A model reads a tool's description as text: Markdown is what it reads best, and what the
catalog shows. Only the paragraphs that hold HTML elements are converted (by markdownify):
a description already in Markdown, or one that merely mentions `<branch name>`, is kept as
written, its blank lines and code blocks included.
"""

from __future__ import annotations

import functools
import re

from markdownify import markdownify

# The HTML elements API documents write in descriptions; any other `<word>` is text.
_ELEMENT = re.compile(
    r"</?(?:a|b|blockquote|br|code|dd|del|div|dl|dt|em|h[1-6]|hr|i|img|kbd|li|ol|p|pre|s|small|span|strong"
    r"|sub|sup|table|tbody|td|th|thead|tr|u|ul)(?:\s[^<>]*)?/?>",
    re.IGNORECASE,
)
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")


@functools.lru_cache(maxsize=4096)
def markdown(text: str) -> str:
    """`text` with its paragraphs that hold HTML elements converted to Markdown. Cached: a
    document repeats its descriptions (Stripe's `expand` in every operation)."""
    if not _ELEMENT.search(text):
        return text
    paragraphs = _PARAGRAPHS.split(text)
    return "\n\n".join(_converted(p) if _ELEMENT.search(p) else p for p in paragraphs).strip()


def _converted(html: str) -> str:
    # Identifiers (`amount_due`, `*`) stay as written: escaping them is noise to a model.
    return markdownify(html, heading_style="ATX", bullets="-", escape_underscores=False,
                       escape_asterisks=False).strip()
