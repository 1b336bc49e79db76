"""Page-level aggregation: in a long paged document the unit a reader looks at is the page.

A 10-K's statement page is cut into a dozen row chunks; a chunk search then spends its top 5 on
two or three pages (the same table's neighbouring rows), and a page whose chunks each match a
little loses to one narrative chunk that matches a lot. Here the candidates of one page are
scored together, their best chunk counting fully and the page's next ones a decaying share
(``share``, ``share²`` …), and each page is returned once, as its best chunk with the page's
score. Chunks without pages (Markdown, imported text) are their own group, so unpaged libraries
rank exactly as before.

A page's result can carry its companions (``page_companions``): the page's other chunks that
scored nearly as well as its best. One result per page keeps a dense page's rows from filling
the results, but it dropped the row a question was about: on a one-page table report, "Florida
total background checks" returned the Totals row (2.18) and not Florida's (2.13), so a model
read the national total as Florida's. The companions join their page's result (same pages,
same ranking), each still citable by its own chunk id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Candidate:
    chunk_id: str
    score: float
    document_id: str
    pages: Sequence[int]


def page_key(candidate: Candidate) -> tuple[str, int] | str:
    """The page a chunk belongs to (its first page: a chunk spanning a page break is read where
    it starts), or the chunk itself when it has no page."""
    if not candidate.pages:
        return candidate.chunk_id
    return (candidate.document_id, min(candidate.pages))


def aggregate_pages(candidates: Sequence[Candidate], share: float) -> list[tuple[str, float]]:
    """One (best chunk id, page score) per page, best page first.

    ``candidates`` come best first; a page's score is its best chunk's score plus ``share`` to
    the power i of its (i+1)-th best (only positive scores add: a chunk that barely matched
    should not pull its page down). ``share`` 0 keeps each page's best chunk with its own score
    (pages deduplicated, order unchanged). Ties keep the best chunk's first-seen order.
    """
    if not 0 <= share <= 1:
        raise ValueError(f"page share must be within 0 and 1, not {share}")
    groups: dict[tuple[str, int] | str, list[Candidate]] = {}
    for candidate in candidates:
        groups.setdefault(page_key(candidate), []).append(candidate)
    scored = []
    for members in groups.values():
        best = max(members, key=lambda c: c.score)
        others = sorted((c.score for c in members if c is not best), reverse=True)
        bonus = sum(share ** (i + 1) * max(score, 0.0) for i, score in enumerate(others)) if share else 0.0
        scored.append((best.chunk_id, best.score + bonus))
    order = {c.chunk_id: i for i, c in enumerate(candidates)}
    return sorted(scored, key=lambda pair: (-pair[1], order[pair[0]]))


def page_companions(
    candidates: Sequence[Candidate], kept: Iterable[str], ratio: float, most: int
) -> dict[str, list[str]]:
    """For each kept page result (its best chunk's id), the page's other candidates scoring at
    least ``ratio`` times its best chunk's own score, at most ``most`` of them, best first."""
    wanted = set(kept)
    groups: dict[tuple[str, int] | str, list[Candidate]] = {}
    for candidate in candidates:
        key = page_key(candidate)
        if isinstance(key, tuple):  # chunks without pages have no companions
            groups.setdefault(key, []).append(candidate)
    found: dict[str, list[str]] = {}
    for members in groups.values():
        best = max(members, key=lambda c: c.score)
        if best.chunk_id not in wanted or best.score <= 0:
            continue
        close = sorted(
            (c for c in members if c is not best and c.score >= ratio * best.score), key=lambda c: -c.score
        )[:most]
        if close:
            found[best.chunk_id] = [c.chunk_id for c in close]
    return found
