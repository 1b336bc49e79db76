"""Documents a query names: "What is 3M's FY2018 capital expenditure?" names ``3M_2018_10K.pdf``.

A question about a library of similar documents (every company's 10-K has a cash flow
statement) is usually asked about one of them, by name. Chunk text rarely repeats the name, so
neither search arm can tell 3M's statement from PepsiCo's; the document's name can. Each word
of a file name is weighted by how rare it is among the library's file names (a word every
10-K's name has, like "10k", weighs little; "3m" weighs a lot); a document is named when the
query holds enough of that weight (its coverage, 0 … 1) including a word with letters (a bare
year or number never names a document by itself).

Only the file name counts, not the title: titles are often sentences (a paper's, a press
release's) that share words with any question on their topic. On SciFact, whose abstracts'
titles are such sentences, title-naming fired for 566 of 809 train queries and the best-named
abstract was a relevant one for only 147; file names there are numbers and never fire.

Query words are matched generously, the way people write names: case and punctuation are
ignored, a word mixing letters and digits also counts as its parts ("FY2018" -> "2018"), and
two or three adjacent words also count joined ("American Water Works" -> "americanwaterworks").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from urllib.parse import unquote, urlparse

_WORD = re.compile(r"[^\W_]+")
_PART = re.compile(r"\d+|[^\W\d_]+")
# Words too common to name anything (titles are sentences; file names rarely hold them).
_STOP = frozenset(
    "a an and are as at be by for from in into is it of on or s the this to was were with".split()
)


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.casefold()) if w not in _STOP]


def query_terms(query: str) -> set[str]:
    """The query's words, their letter/digit parts and their adjacent pairs and triples joined."""
    runs = _WORD.findall(query.casefold())
    terms = set(runs)
    for run in runs:
        terms.update(_PART.findall(run))
    for size in (2, 3):
        terms.update("".join(runs[i : i + size]) for i in range(len(runs) - size + 1))
    return terms - _STOP


def name_words(uri: str) -> list[str]:
    """The words of a document's file name (without extension)."""
    parsed = urlparse(uri)
    return words(PurePosixPath(unquote(parsed.path or uri)).stem)


class NameIndex:
    """The file names of a library's documents (``labels``: id -> (uri, …)), each word weighted
    by how rare it is among them, for finding the documents a query names."""

    def __init__(self, labels: Mapping[str, Sequence[str | None]]) -> None:
        self.names: dict[str, frozenset[str]] = {}
        self.postings: dict[str, set[str]] = {}
        for doc_id, label in labels.items():
            name = frozenset(name_words(label[0] or ""))
            self.names[doc_id] = name
            for word in name:
                self.postings.setdefault(word, set()).add(doc_id)
        total = len(self.names)
        self.weight = {word: math.log(1 + total / len(ids)) for word, ids in self.postings.items()}
        # words mixing letters and digits match when all their parts are in the query; each is
        # filed under its rarest part, so a query looks only at words one of its terms can
        # complete (not at every such word: "d0000123"-style names made that O(documents))
        parts = {word: _PART.findall(word) for word in self.postings}
        parts = {word: found for word, found in parts.items() if len(found) > 1}
        seen = Counter(part for found in parts.values() for part in set(found))
        self.parts: dict[str, list[tuple[str, list[str]]]] = {}
        for word, found in parts.items():
            self.parts.setdefault(min(found, key=lambda part: (seen[part], part)), []).append((word, found))

    def named(self, query: str, scope: Iterable[str] | None = None, min_coverage: float = 0.3) -> dict[str, float]:
        """The documents ``query`` names (within ``scope``) with how fully it names them: the
        matched share of their name's word weight, ``min_coverage`` … 1."""
        terms = query_terms(query)
        matched = {w for w in terms if w in self.postings}
        matched |= {
            word
            for term in terms
            for word, parts in self.parts.get(term, ())
            if all(part in terms for part in parts)
        }
        # a bare number never names a document by itself
        lettered = {w for w in matched if len(w) > 1 and not w.isdigit()}
        candidates = set().union(*(self.postings[w] for w in lettered)) if lettered else set()
        if scope is not None:
            candidates &= set(scope)
        found: dict[str, float] = {}
        for doc_id in candidates:
            name = self.names[doc_id]
            coverage = sum(self.weight[w] for w in name & matched) / sum(self.weight[w] for w in name)
            if coverage >= min_coverage:
                found[doc_id] = coverage
        return found


_CACHE: list[tuple[Mapping[str, Sequence[str | None]], NameIndex]] = []


def named_documents(
    query: str, labels: Mapping[str, Sequence[str | None]], scope: Iterable[str] | None = None,
    min_coverage: float = 0.3,
) -> dict[str, float]:
    """``NameIndex(labels).named(query, scope, min_coverage)``; the index of the last ``labels``
    mapping is kept (the store hands out one mapping until its documents change)."""
    if not _CACHE or _CACHE[0][0] is not labels:
        _CACHE[:] = [(labels, NameIndex(labels))]
    return _CACHE[0][1].named(query, scope, min_coverage)


def boost_named(
    scored: Sequence[tuple[str, float]], document_of: Mapping[str, str], named: Mapping[str, float], weight: float
) -> list[tuple[str, float]]:
    """``scored`` (chunk id, score in 0 … ~2) with ``weight`` × its document's coverage added,
    best first (ties keep their order)."""
    boosted = [(cid, score + weight * named.get(document_of.get(cid, ""), 0.0)) for cid, score in scored]
    return sorted(boosted, key=lambda pair: -pair[1])
