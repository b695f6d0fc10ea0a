"""Pure: the words a tool is searched by, and the words of a request, normalized alike.

A tool's search document is its name, its description and its parameters' names and
descriptions as one line of normalized words: lowercase, identifiers split (snake_case,
camelCase), a plural "s" stripped, function words dropped, and runs of Chinese, Japanese or
Korean characters written as overlapping character pairs. Those scripts put no spaces between
words, so neither PostgreSQL's `simple` parser (one token per run) nor pg_trgm (trigrams within
a word) could match 退款 inside 为订单退款; as pairs, 退款 is a word of both the document and
the request. The same normalizer makes the words of a request (`request_terms`), so both
search backends compare like with like.

Clauses saying what a tool does NOT do are left out of the document: lint asks every
description for one ("Do not use it to book a pickup (use schedule_pickup)"), and its words
describe another tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# Han (with extension A and compatibility ideographs), kana, hangul.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(f"[{_CJK}]+|[^\\W_{_CJK}]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_CLAUSE_END = re.compile(r"(?<=[.;:!?。；：！？])\s+|(?<=[。；：！？])")
_ASIDE = re.compile(r"\([^)]*\)|（[^）]*）")
_NOT_THIS_TOOL = re.compile(
    r"\b(?:do not|don't|does not|doesn't|not for|never|instead|cannot|can't)\b|\buse [a-z][a-z0-9]*_\w+"
    r"|不要|请勿|不能|不可|勿用|不用于|而不是",
    re.IGNORECASE,
)
# Words that say nothing of what a tool does (English function words, and the usual padding
# of a request). Dropped from both sides: with the `simple` configuration PostgreSQL keeps
# every word, and "the" would make every description a match.
STOPWORDS = frozenset(
    "a about after also am an and any are as at be been before being both but by can could "
    "did do doe does e eg etc for from had ha has have he her here him his how i if in into is it "
    "its just me might more most must my no nor not of on once one only or other our out over own "
    "per please same she should so some such than that the their them then there these they this "
    "those through to too under until up very want was way we were what when which while who "
    "whom why will with would you your yours need like let".split()
)


def split_identifier(text: str) -> str:
    """snake_case, kebab-case and camelCase written as words: `refundPayment_v2` → `refund Payment v2`."""
    return _CAMEL.sub(" ", text.replace("_", " ").replace("-", " "))


def _singular(word: str) -> str:
    """A plural "s" stripped, lightly: orders → order, deliveries → delivery; status, address kept."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# Chinese function characters (particles, pronouns, measure words): a pair holding one is
# padding ("帮我", "一下", "的状"), dropped like an English function word.
_CJK_FUNCTION = frozenset("的了吗呢吧啊呀我你您他她它们这那个些一下请帮要想把被是在和与及或就都也还么什")


def _cjk_pairs(run: str) -> list[str]:
    if len(run) == 1:
        return [] if run in _CJK_FUNCTION else [run]
    pairs = (run[i:i + 2] for i in range(len(run) - 1))
    return [pair for pair in pairs if not _CJK_FUNCTION.intersection(pair)]


def is_cjk(word: str) -> bool:
    return bool(_CJK_RUN.fullmatch(word))


def search_words(text: str) -> list[str]:
    """The normalized words of `text`, in order, function words dropped."""
    words: list[str] = []
    for token in _WORD.findall(split_identifier(text)):
        if is_cjk(token):
            words += _cjk_pairs(token)
            continue
        word = _singular(token.lower())
        if len(word) > 1 and word not in STOPWORDS and not word.isdigit():
            words.append(word)
    return words


def capability_clauses(text: str) -> Iterator[str]:
    """The clauses of a description, less those that say what the tool does not do."""
    for clause in _CLAUSE_END.split(text):
        if clause.strip() and not _NOT_THIS_TOOL.search(clause):
            yield _ASIDE.sub(lambda aside: "" if _NOT_THIS_TOOL.search(aside[0]) else aside[0], clause)


def _schema_texts(schema: Any) -> Iterator[str]:
    """Parameter names and descriptions of a JSON Schema, nested objects and arrays too."""
    if isinstance(schema, list):
        for item in schema:
            yield from _schema_texts(item)
        return
    if not isinstance(schema, Mapping):
        return
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, subschema in properties.items():
            yield str(name)
            if isinstance(subschema, Mapping) and isinstance(subschema.get("description"), str):
                yield from capability_clauses(subschema["description"])
            if isinstance(subschema, Mapping) and isinstance(subschema.get("enum"), list):
                yield from (value for value in subschema["enum"] if isinstance(value, str))
            yield from _schema_texts(subschema)
    for key in ("items", "prefixItems", "anyOf", "oneOf", "allOf", "$defs", "definitions"):
        nested = schema.get(key)
        yield from _schema_texts(list(nested.values()) if key in ("$defs", "definitions")
                                 and isinstance(nested, Mapping) else nested)


def search_document(*, name: str, description: str, parameters: Any) -> str:
    """What a tool version is searched by: one line of normalized words (see the module)."""
    texts: Iterable[str] = [name, *capability_clauses(description), *_schema_texts(parameters)]
    return " ".join(word for text in texts for word in search_words(text))


# A small thesaurus of the words requests and tool descriptions use for the same action or
# thing. Lexical search cannot know that a parcel is a shipment; until a vector index serves
# `ToolSearch`, these groups bridge the commonest gaps. General words of tools only, never a
# tool's name: a group is searched as one term of the request (`RequestTerm.alternatives`).
SYNONYM_GROUPS: tuple[frozenset[str], ...] = tuple(frozenset(group.split()) for group in (
    "order purchase",
    "refund reimburse repay reimbursement chargeback",
    "shipment parcel package delivery consignment",
    "carrier courier",
    "pickup collect collection",
    "track where locate trace",
    "book schedule arrange reserve",
    "cancel abort revoke void",
    "search list find browse filter",
    "show get fetch retrieve view lookup",
    "id number identifier",
    "run execute",
    "code script program",
    "customer user client",
    "status state",
    "delete remove",
    "create add",
    "update change edit modify",
    "send email notify",
    "money payment",
    "date day",
))
# Phrases of a request that say one word of a group.
PHRASES: Mapping[tuple[str, ...], str] = {
    ("money", "back"): "refund",
    ("pay", "back"): "refund",
    ("look",): "lookup",
    ("pick",): "pickup",
}


@dataclass(frozen=True)
class RequestTerm:
    word: str
    alternatives: frozenset[str]  # the word and its synonyms


def request_terms(query: str) -> list[RequestTerm]:
    """The terms of a request, each with its synonyms; a phrase of PHRASES becomes its word."""
    words = search_words(query)
    terms: list[RequestTerm] = []
    seen: set[str] = set()
    i = 0
    while i < len(words):
        phrase = next((p for p in PHRASES if tuple(words[i:i + len(p)]) == p), None)
        word = PHRASES[phrase] if phrase else words[i]
        i += len(phrase) if phrase else 1
        if word not in seen:
            seen.add(word)
            group = next((g for g in SYNONYM_GROUPS if word in g), frozenset())
            terms.append(RequestTerm(word, group | {word}))
    return terms


def name_coverage(name: str, terms: Iterable[RequestTerm]) -> float:
    """The share of a tool name's words the request says (or a synonym of), 0..1."""
    name_words = search_words(name)
    if not name_words:
        return 0.0
    said = set().union(*(t.alternatives for t in terms))
    return sum(word in said for word in name_words) / len(name_words)
