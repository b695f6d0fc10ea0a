"""The grouping key of a capability agents asked for, shared by who records requests (the
capabilities app) and who opens tools for them (the gateway's request_capability)."""

from __future__ import annotations

import re

MAX_NAME_CHARS = 100
# Words that change nothing of what is asked for: "export orders as CSV" is "export orders CSV".
_FILLER_WORDS = frozenset(
    {"a", "an", "the", "as", "to", "of", "for", "in", "on", "into", "by", "with", "and", "or", "from", "all"}
)


def capability_name(text: str) -> str:
    """The grouping key of a capability: snake_case words, e.g. "Export CSV" → "export_csv".

    camelCase is split, every run of other characters becomes one underscore, filler words
    are dropped and plurals made singular, so `exportOrdersCsv`, "export orders as CSV" and
    `export_orders_csv` count as one near-duplicate: operators see demand, not spelling. Words
    of any script are kept ("导出订单" stays itself).
    """
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text.strip())
    words = [_singular(word) for word in re.split(r"[\W_]+", spaced.lower()) if word]
    kept = [word for word in words if word not in _FILLER_WORDS] or words
    return "_".join(kept)[:MAX_NAME_CHARS].rstrip("_") or "unnamed"


def _singular(word: str) -> str:
    """"orders" → "order"; words that only look plural ("status", "address", "analysis") stay."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-3] + "y" if word.endswith("ies") else word[:-1]
    return word
