"""Searching the tools an agent may call for the one a request describes, by meaning: what
`request_capability` offers when the model lacks a tool.

Only the tools the caller names are ever read (its grants, as tool ids: the catalog does not
read tenancy), each by its latest published version or the version the caller pins. Every
one of them may come back, best first, with `matched` saying whether it does what was asked;
the caller names the closest when none does.

PostgreSQL ranks with its full-text search and pg_trgm's trigram similarity over the
versions' search documents (search_text.py): no model to download or serve, and it keeps up
with every version published. Other databases (SQLite for a demo without services) use the
same words with a plainer match. A vector index could serve `ToolSearch` later.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from django.db import connection
from django.db.models import Q

from .models import ToolVersion, VersionStatus
from .search_text import RequestTerm, is_cjk, name_coverage, request_terms


@dataclass(frozen=True)
class ToolMatch:
    tool_id: int
    name: str
    score: float  # 0..1, higher is closer
    matched: bool  # score >= the backend's MATCH: this tool does what was asked


class ToolSearch(Protocol):
    def search(
        self, query: str, *, tool_ids: Collection[int], limit: int = 5,
        pinned: Mapping[int, int] | None = None,
    ) -> list[ToolMatch]:
        """At most `limit` of the tools among `tool_ids`, best first; `pinned`: tool id → the
        version id to search instead of the tool's latest published one."""
        ...


@dataclass(frozen=True)
class _Candidate:
    tool_id: int
    name: str
    version_id: int
    document: str


def _candidates(tool_ids: Collection[int], pinned: Mapping[int, int] | None) -> list[_Candidate]:
    """The version searched of each tool among `tool_ids`: the pinned one, else the latest
    published; a tool with neither is left out (it cannot be called)."""
    ids = set(tool_ids)
    pins = {tool_id: version_id for tool_id, version_id in (pinned or {}).items() if tool_id in ids}
    rows = (
        ToolVersion.objects.filter(tool_id__in=ids)
        .filter(Q(status=VersionStatus.PUBLISHED, tool_id__in=ids - set(pins)) | Q(pk__in=pins.values()))
        .order_by("tool_id", "-number")
        .values_list("tool_id", "tool__name", "pk", "search_document")
    )
    chosen: dict[int, _Candidate] = {}
    for tool_id, name, version_id, document in rows:
        if tool_id in pins and pins[tool_id] != version_id:
            continue
        chosen.setdefault(tool_id, _Candidate(tool_id, name, version_id, document))
    return list(chosen.values())


def _term_score(similarities: Sequence[float], term: RequestTerm, floor: float) -> float:
    """How well the document says one term: its own word fully, a synonym a little less (the
    request's own word is the better evidence), a near spelling in proportion; below `floor`,
    not at all (a shared trigram or prefix is no evidence)."""
    best = 0.0
    for word, similarity in zip(sorted(term.alternatives), similarities, strict=True):
        value = similarity if word == term.word else similarity * SYNONYM_DISCOUNT
        best = max(best, value if similarity >= floor else 0.0)
    return best


# A synonym says a little less than the request's own word.
SYNONYM_DISCOUNT = 0.9
# Of the character pairs of a Chinese request about half straddle two words (帮我查订单: 查订)
# and match nothing: each counts as half a term, so a request whose words all match scores
# as an English one does.
CJK_PAIR_WEIGHT = 0.5


def _coverage(terms: Sequence[RequestTerm], similarity: Callable[[str], float], *, floor: float) -> float:
    """The share of the request's terms the document says, 0..1 (0 for a request of no terms)."""
    expected = sum(CJK_PAIR_WEIGHT if is_cjk(term.word) else 1.0 for term in terms)
    said = sum(
        _term_score([similarity(word) for word in sorted(term.alternatives)], term, floor) for term in terms
    )
    return min(1.0, said / expected) if expected else 0.0


@dataclass(frozen=True)
class _Weights:
    document: float
    name: float
    rank: float = 0.0

    def score(self, terms: Sequence[RequestTerm], *, coverage: float, name: float, rank: float = 0) -> float:
        """The weighted mean, 0..1. A request written only in Chinese (or Japanese, Korean) cannot
        say a tool name's words (ASCII): the name's weight is left out rather than counted as 0."""
        name_weight = self.name if any(not is_cjk(term.word) for term in terms) else 0.0
        total = self.document + name_weight + self.rank
        return (self.document * coverage + name_weight * name + self.rank * rank) / total


def _ranked(matches: list[ToolMatch], limit: int) -> list[ToolMatch]:
    return sorted(matches, key=lambda m: (-m.score, m.name))[:limit]


class SimpleToolSearch:
    """Word overlap in Python, for databases without PostgreSQL's text search: the share of
    the request's terms the document has (a synonym, or a shared prefix of most of the word,
    counting a little less), and of the tool name's words the request says."""

    # Chosen on tests/catalog/search_corpus.py, as PostgresToolSearch's (whose comment says
    # why), less the full-text rank this backend has not.
    WEIGHTS = _Weights(document=0.65, name=0.35)
    MATCH = 0.4
    PREFIX_SCORE = 0.7

    def search(
        self, query: str, *, tool_ids: Collection[int], limit: int = 5,
        pinned: Mapping[int, int] | None = None,
    ) -> list[ToolMatch]:
        terms = request_terms(query)
        matches = []
        for candidate in _candidates(tool_ids, pinned):
            words = frozenset(candidate.document.split())
            score = self.WEIGHTS.score(
                terms, coverage=_coverage(terms, partial(self._similarity, words=words), floor=0.5),
                name=name_coverage(candidate.name, terms),
            )
            matches.append(ToolMatch(candidate.tool_id, candidate.name, round(score, 4), score >= self.MATCH))
        return _ranked(matches, limit)

    def _similarity(self, word: str, *, words: frozenset[str]) -> float:
        if word in words:
            return 1.0
        # A longer or shorter form of the word: shipping/shipment, cancellation/cancelled.
        stem = word[:max(5, len(word) * 3 // 4)]
        return self.PREFIX_SCORE if len(word) >= 5 and any(w.startswith(stem) for w in words) else 0.0


class PostgresToolSearch:
    """PostgreSQL's full-text rank and pg_trgm's word similarity over the search documents.

    Each term of the request counts by its best trigram word similarity to the document
    (its own word, or a synonym a little less), so a word spelt a little differently still
    counts and a request needs none of its words in particular: "export orders as csv" finds
    a tool about orders and CSV. ts_rank of the terms ORed adds how much of the document is
    about them, separating two tools that both mention orders. The tool name's words the
    request says weigh as in SimpleToolSearch.
    """

    # Chosen on tests/catalog/search_corpus.py (its test prints each request's scores). The
    # terms' coverage of the document carries the meaning; the name separates tools that
    # share words (cancel_order and refund_payment both speak of orders and money); ts_rank
    # (normalized by 32: rank/(rank+1)) is small on these short documents and mostly breaks
    # near-ties. Below a word similarity of 0.6 two words share a trigram or two, no meaning.
    WEIGHTS = _Weights(document=0.55, name=0.3, rank=0.15)
    RANK_SCALE = 4.0  # rank/(rank+1) of a focused match is about 0.25: scaled to reach 1
    SIMILARITY_FLOOR = 0.6
    MATCH = 0.4

    _SQL = """
        SELECT v.id,
               ts_rank(to_tsvector('simple', v.search_document), to_tsquery('simple', %s), 32),
               ARRAY(SELECT word_similarity(w, v.search_document)
                     FROM unnest(%s::text[]) WITH ORDINALITY AS u(w, n) ORDER BY n)
        FROM catalog_toolversion v
        WHERE v.id = ANY(%s)
    """

    def search(
        self, query: str, *, tool_ids: Collection[int], limit: int = 5,
        pinned: Mapping[int, int] | None = None,
    ) -> list[ToolMatch]:
        terms = request_terms(query)
        candidates = _candidates(tool_ids, pinned)
        words = sorted(set().union(*(t.alternatives for t in terms)))
        scored: dict[int, tuple[float, list[float]]] = {}
        if words and candidates:
            # Lexemes are normalized words (letters, digits, CJK pairs): quoted, they need no escaping.
            or_query = " | ".join(f"'{word}'" for word in words)
            with connection.cursor() as cursor:
                cursor.execute(self._SQL, [or_query, words, [c.version_id for c in candidates]])
                scored = {version_id: (rank, similarities) for version_id, rank, similarities in cursor}
        matches = []
        for candidate in candidates:
            rank, similarities = scored.get(candidate.version_id, (0.0, [0.0] * len(words)))
            of_word = dict(zip(words, similarities, strict=True))
            score = self.WEIGHTS.score(
                terms, coverage=_coverage(terms, of_word.__getitem__, floor=self.SIMILARITY_FLOOR),
                name=name_coverage(candidate.name, terms), rank=min(1.0, rank * self.RANK_SCALE),
            )
            matches.append(ToolMatch(candidate.tool_id, candidate.name, round(score, 4), score >= self.MATCH))
        return _ranked(matches, limit)


def tool_search() -> ToolSearch:
    """The search of this database: full-text and trigram on PostgreSQL, else the simple match."""
    return PostgresToolSearch() if connection.vendor == "postgresql" else SimpleToolSearch()
