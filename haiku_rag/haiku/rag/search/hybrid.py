"""Full-text, vector and hybrid (reciprocal-rank fusion) search over chunks.

Hybrid search runs both arms with a candidate pool larger than the limit and fuses their
ranks with RRF (score = sum of 1 / (k + rank), k = 60 by default). Chunks whose vectors have not
landed yet still come back through the full-text arm, so a freshly added document is findable
before embedding finishes. A document filter is resolved to document ids first and applied
inside both arms before their limits, so filtered searches never under-return.

Weighted RRF (``search.fusion``) scales each arm's contribution (weight / (k + rank)) and sets
each arm's pool. Score fusion (the library's default, ``score_fusion``) sums each arm's min-max
normalised scores; it is asymmetric: a full-text hit the vector arm did not return keeps only
``fts_only_share`` of its score, so BM25 promotes the embedder's candidates fully but its own
term-matching passages enter only partly (chunks without vectors yet keep their full score).
With a reranker (``search.rerank``), a pool of fused candidates larger than ``limit`` goes to it
and only its order is cut to ``limit``; if the reranker fails, the fused order is kept and a
warning logged.

Three stages follow fusion (``search.name_weight``, ``search.reference_weight``,
``search.page_share``): documents the query names by file name gain a boost and join each arm's
pool (``naming.py``), chunks of reference lists are demoted unless the query asks for them or
nothing else matches (``references.py``), and paged chunks are grouped so each page comes back
once, scored with its other chunks (``pages.py``).
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import re
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from haiku.rag.errors import EmbeddingError
from haiku.rag.search.naming import boost_named, named_documents
from haiku.rag.search.pages import Candidate, aggregate_pages, page_companions, page_key
from haiku.rag.search.references import asks_for_references, is_reference_chunk
from haiku.rag.store import schema as S
from haiku.rag.store.documents import boxes_from_json
from haiku.rag.store.engine import Store
from haiku.rag.store.models import SearchResult
from haiku.rag.store.sql import sql_in
from haiku.rag.store.vectors import NO_PAGE, PAGE_UNKNOWN

if TYPE_CHECKING:
    from haiku.rag.config import SearchConfig
    from haiku.rag.search.rerank import Reranker

log = logging.getLogger("haiku.rag")

SearchType = Literal["hybrid", "vector", "fts"]
SEARCH_TYPES: tuple[str, ...] = ("hybrid", "vector", "fts")

_CHUNK_COLUMNS = [
    "id",
    "document_id",
    "generation",
    "order",
    "content",
    "headings",
    "labels",
    "doc_item_refs",
    "page_numbers",
    "boxes",
]
# What ranking needs of a full-text hit (liveness, page grouping) and its row id. The other
# columns are read for the results only, after fusion: a 100k-chunk table's full-text query of
# 40 hits took ~13.5 ms with every column and ~9.5 with these (session 13), on the thread that
# shares the cores with the query embedding and the vector product.
_FTS_COLUMNS = ["id", "document_id", "generation", "page_numbers", "_score"]
# Characters with a meaning in LanceDB's full-text query syntax; a user's question should
# never fail because it contains one of them.
_FTS_SYNTAX = re.compile(r"[\"'(){}\[\]^~*?:\\/+\-!&|<>=]")


def _document_clause(document_ids: Sequence[str] | None) -> str | None:
    return None if document_ids is None else sql_in("document_id", set(document_ids))


def fts_hits(store: Store, query: str, limit: int, document_ids: Sequence[str] | None) -> list[dict[str, Any]]:
    text = _FTS_SYNTAX.sub(" ", query).strip()
    if not text:
        return []
    search = store.table(S.CHUNKS).search(text, query_type="fts", fts_columns="content_fts")
    clause = _document_clause(document_ids)
    if clause:
        search = search.where(clause, prefilter=True)
    return search.with_row_id(True).select(_FTS_COLUMNS).limit(limit).to_list()


@dataclass(frozen=True)
class AnnParameters:
    """How LanceDB's ANN index is queried beyond the exact-search budget.

    ``nprobes``: IVF partitions searched; ``refine_factor``: candidates re-ranked with the
    full vectors per result wanted; ``ef``: HNSW candidates inside a partition. The defaults
    come from ``tests/bench/bench_search.py --ann`` (recall@10 against exact search on real
    MiniLM embeddings; see docs/benchmarks.md).
    """

    nprobes: int = 40
    refine_factor: int | None = 2
    ef: int | None = 64


ANN = AnnParameters()


def vector_hits(
    store: Store,
    vector: np.ndarray,
    limit: int,
    document_ids: Sequence[str] | None,
    ann: AnnParameters | None = None,
) -> list[dict[str, Any]]:
    if not store.has_table(S.CHUNK_VECTORS):
        return []
    matrix = store.vector_matrix()
    if matrix is not None:  # within the exact-search budget: exact, in memory (store/vectors.py)
        return matrix.nearest(vector, limit, document_ids)
    ann = ann or ANN
    search = store.table(S.CHUNK_VECTORS).search(vector.astype(np.float32)).distance_type("cosine")
    search = search.nprobes(ann.nprobes)
    if ann.refine_factor:
        search = search.refine_factor(ann.refine_factor)
    if ann.ef:
        # HNSW must keep at least the candidates the refine step re-ranks (limit x refine
        # factor), or LanceDB refuses the query ("ef must be greater than or equal to k")
        search = search.ef(max(ann.ef, limit * (ann.refine_factor or 1)))
    clause = _document_clause(document_ids)
    if clause:
        search = search.where(clause, prefilter=True)
    hits = search.select(["chunk_id", "document_id", "generation", "_distance"]).limit(limit).to_list()
    if not store.serves_searches:
        store.prewarm()  # the first search through the index: the next ones find it cached
    pages = store.page_map()  # each chunk's first page, once the store has read them
    if pages is not None:
        for hit, page in zip(hits, pages.first_pages([h["chunk_id"] for h in hits]), strict=True):
            if page != PAGE_UNKNOWN:
                hit["first_page"] = None if page == NO_PAGE else page
    return hits


def score_fusion(
    arms: Sequence[Sequence[tuple[str, float]]],
    weights: Sequence[float],
    *,
    alone: Sequence[float] | None = None,
    whole: Container[str] = (),
) -> list[tuple[str, float]]:
    """Fuse (id, score) lists by their scores: each arm's scores are min-max normalised over
    its own candidates (1 = its best, 0 = its worst; a lone or all-equal candidate counts 1),
    then summed with the arm's weight (a candidate an arm did not return adds 0 there). Unlike
    RRF this keeps how far apart an arm's candidates are, not only their order. Ties keep
    first-seen order.

    ``alone`` (one share per arm, default all 1): a candidate that only this arm returned keeps
    that share of its weighted score, so an arm can promote the other arm's candidates fully but
    bring in its own only partly. Ids in ``whole`` keep their full score (candidates the other
    arm could not have returned)."""
    if alone is None:
        alone = [1.0] * len(arms)
    if not len(weights) == len(alone) == len(arms):
        raise ValueError(f"{len(arms)} arms, {len(weights)} weights and {len(alone)} shares")
    returned_by: dict[str, int] = {}
    for hits, weight in zip(arms, weights, strict=True):
        if weight:
            for item in {item for item, _ in hits}:
                returned_by[item] = returned_by.get(item, 0) + 1
    fused: dict[str, float] = {}
    for hits, weight, share in zip(arms, weights, alone, strict=True):
        if weight == 0 or not hits:
            continue
        low = min(score for _, score in hits)
        spread = max(score for _, score in hits) - low
        for item, score in hits:
            normalised = (score - low) / spread if spread > 0 else 1.0
            if returned_by[item] == 1 and item not in whole:
                normalised *= share
            fused[item] = fused.get(item, 0.0) + weight * normalised
    return sorted(fused.items(), key=lambda pair: -pair[1])


def _fuse_scores(
    store: Store,
    text_scored: list[tuple[str, float]],
    vec_scored: list[tuple[str, float]],
    rows: dict[str, dict[str, Any]],
    weights: tuple[float, float],
    fts_only_share: float,
    dominant_ratio: float = 0.0,
    named: set[str] | frozenset[str] = frozenset(),
) -> list[tuple[str, float]]:
    """Score fusion where a full-text hit the vector arm did not return keeps ``fts_only_share``
    of its score, unless the vector arm could not have returned it (its document has no vectors
    yet, or the vector arm returned nothing), or it is the full-text arm's only hit or its best
    scoring ``dominant_ratio`` times the next or more (0: off): a rare word found in one
    passage ("SLEREXE", "Holroyd Road" in a scanned letter) is what the query is after, not a
    coincidence of common words, and it ranked below five passages of vector noise. ``named``
    (``_Search.rare_name_hits``) count as the arm's best, whole."""
    if fts_only_share == 1 or not vec_scored:
        return score_fusion([text_scored, vec_scored], list(weights))
    pending = store.documents_without_vectors()
    whole = {cid for cid, _ in text_scored if rows[cid]["document_id"] in pending} if pending else set()
    if dominant_ratio and text_scored:
        if len(text_scored) == 1 or text_scored[0][1] >= dominant_ratio * text_scored[1][1] > 0:
            whole.add(text_scored[0][0])
    if named and text_scored:
        # the few passages holding a rare name the query writes count as full text's best,
        # whole: the question's common words must not outweigh the one word it is about
        best = max(score for _, score in text_scored)
        text_scored = [(cid, best if cid in named else score) for cid, score in text_scored]
        whole |= set(named)
    return score_fusion([text_scored, vec_scored], list(weights), alone=[fts_only_share, 1.0], whole=whole)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Fuse ranked id lists (score = sum of weight / (k + rank)); ranks start at 1. Ties keep
    first-seen order. ``weights`` (one per ranking, default all 1); a ranking of weight 0 adds
    nothing, not even its ids."""
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        if weight == 0:
            continue
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])


_ARM_POOL: concurrent.futures.ThreadPoolExecutor | None = None
# Whether a chunk belongs to a reference list, by chunk id, as searches judged it: a chunk's
# headings and text never change under its id (a new version of a document has new ids), so a
# candidate seen before is neither read nor judged again. ~100 bytes an entry; cleared when full.
_JUDGED: dict[str, bool] = {}
_JUDGED_MAX = 200_000


def _arm_pool() -> concurrent.futures.ThreadPoolExecutor:
    global _ARM_POOL
    if _ARM_POOL is None:
        _ARM_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="haiku-rag-search")
    return _ARM_POOL


@dataclass(frozen=True)
class SearchSettings:
    """How a search ranks and cuts: the library's ``search`` settings, taken whole
    (``from_config``). The defaults are the plain ones: reciprocal-rank fusion of both arms at
    weight 1, pools from ``candidate_factor``, one result per chunk, no name boost.

    ``fusion``: ``reciprocal_rank_fusion`` (``"rrf"``, with ``rrf_k``) or ``score_fusion``
    (``"score"``); an arm of weight 0 is not run; ``fts_pool``/``vector_pool`` set an arm's pool
    (default ``max(limit × candidate_factor, 20)``). ``fts_only_share`` (score fusion): the share
    of its score a full-text hit keeps when the vector arm did not return it, unless it is the
    full-text arm's only hit or scores ``dominant_ratio`` times its next (0: off). ``name_weight`` > 0:
    documents the query names (``naming.named_documents``) also contribute their own best
    candidates to each arm, and every candidate gains ``name_weight`` × how fully its document is
    named (scores are then normalised per arm, as in score fusion). ``page_share`` not None: one
    result per page, pages scored by their best chunk plus that share of the next ones
    (``pages.aggregate_pages``), and ``page_companion_ratio`` > 0 joins to a page's result its
    chunks scoring at least that share of its best (``pages.page_companions``, at most
    ``MAX_PAGE_COMPANIONS``; not with a reranker). ``rerank_pool``: with a reranker, the best
    ``max(rerank_pool, limit)`` chunks are reordered by it before the cut to ``limit`` (and, with
    ``page_share``, each page keeps its first chunk in that order). ``reference_weight`` < 1:
    chunks of reference lists (``references.is_reference_chunk``) keep that share of their
    fused score, unless the query asks for references (``references.asks_for_references``) or
    no other chunk matched the query's words (``_Search.demote_references``); 1: off.
    """

    rrf_k: int = 60
    candidate_factor: int = 4
    fusion: Literal["rrf", "score"] = "rrf"
    fts_weight: float = 1.0
    vector_weight: float = 1.0
    fts_pool: int | None = None
    vector_pool: int | None = None
    fts_only_share: float = 1.0
    dominant_ratio: float = 0.0
    page_share: float | None = None
    page_companion_ratio: float = 0.0
    name_weight: float = 0.0
    rerank_pool: int = 30
    reference_weight: float = 1.0

    @classmethod
    def from_config(cls, search: SearchConfig) -> SearchSettings:
        fusion = search.fusion
        return cls(
            rrf_k=search.rrf_k,
            candidate_factor=search.candidate_factor,
            fusion=fusion.method,
            fts_weight=fusion.fts_weight,
            vector_weight=fusion.vector_weight,
            fts_pool=fusion.fts_pool,
            vector_pool=fusion.vector_pool,
            fts_only_share=fusion.fts_only_share,
            dominant_ratio=fusion.dominant_ratio,
            page_share=search.page_share,
            page_companion_ratio=search.page_companion_ratio,
            name_weight=search.name_weight,
            rerank_pool=search.rerank.pool,
            reference_weight=search.reference_weight,
        )


PLAIN = SearchSettings()


def search_chunks(
    store: Store,
    query: str,
    *,
    query_vector: np.ndarray | Callable[[], np.ndarray] | None,
    search_type: SearchType = "hybrid",
    limit: int = 5,
    document_ids: Sequence[str] | None = None,
    settings: SearchSettings = PLAIN,
    reranker: Reranker | None = None,
    notices: list[str] | None = None,
) -> list[SearchResult]:
    """Ranked chunks as ``SearchResult`` (without context expansion), ranked as ``settings``
    say, within ``document_ids`` when given. ``query_vector`` may be a callable: the query is
    then embedded while the full-text arm runs.

    A hybrid search whose query cannot be embedded (the embedding server unreachable, stalled
    past its deadline, answering garbage) answers from the full-text arm alone: the reason is
    logged and appended to ``notices`` when given. A ``vector`` search raises instead."""
    if limit <= 0 or not query.strip() or (document_ids is not None and not document_ids):
        return []
    search = _Search(store, query, query_vector, search_type, limit, document_ids, settings, reranker, notices)
    while True:
        ranking = search.rank()
        scored = ranking.scored
        if search.named:
            scored = search.boost_named(scored, ranking)
        if settings.reference_weight < 1 and not asks_for_references(query):
            scored = search.demote_references(scored, ranking)
        if settings.page_share is not None and reranker is None:
            scored = search.group_pages(scored, ranking, settings.page_share)
            # one page's chunks can fill the pools (a one-page report's table rows): look
            # deeper until there are enough pages or nothing more to find
            if len(scored) < search.wanted and search.deepen(ranking):
                continue
        break
    candidates = search.candidates(scored[: search.wanted], ranking)
    if reranker is not None and len(candidates) > 1:
        candidates = search.rerank(reranker, candidates)
    results = to_results(store, candidates[:limit])
    return search.with_companions(results, ranking) if search.companions else results


@dataclass
class _Ranking:
    """The arms' hits as fusion ordered them, and what is known of each hit before its row is
    read: ``rows`` (full-text hits' ranking columns; whole rows once fetched), its document,
    its first page (exact vector hits) and its row id (to read the row by)."""

    scored: list[tuple[str, float]]  # (chunk id, score), best first
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    document_of: dict[str, str] = field(default_factory=dict)
    page_of: dict[str, int | None] = field(default_factory=dict)
    row_of: dict[str, int] = field(default_factory=dict)
    text_hits: set[str] = field(default_factory=set)  # the full-text arm's hits, when it ran
    text_ran: bool = False
    # an arm whose pool comes from the search's returned all it was asked for: a deeper
    # search may find more
    full: bool = False


# a name the query writes with a capital is rare when at most this many chunks hold it; at
# most this many names are looked up per search
RARE_NAME_HITS = 3
MAX_RARE_NAMES = 4
_NAME_WORD = re.compile(r"(?<![\w'’])[A-Z][\w-]{2,}")


def _capitalised_names(query: str) -> list[str]:
    """Words of ``query`` written with a capital, its first word aside unless it is all
    capitals (a sentence's first word is capitalised anyway), stop words aside; none for a
    query in title case (most of its words capitalised: a title, whose words say nothing
    rare, and looking each up cost ~6 ms a search)."""
    words = query.split()
    if len(words) >= 3 and sum(w[:1].isupper() for w in words) * 2 > len(words):
        return []
    names = []
    for match in _NAME_WORD.finditer(query):
        word = match.group(0)
        first = not query[: match.start()].strip(" \"'“‘(")
        if (first and not word.isupper()) or word.lower() in _QUESTION_WORDS:
            continue
        names.append(word)
    return list(dict.fromkeys(names))


_QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how does did do is are was were the this that these those "
    "and for with from into about according".split()
)


# pools grow 4x while one result per page leaves fewer pages than asked for, up to this
MAX_GROUPED_POOL = 320
# a page's result carries at most this many of its other chunks (``pages.page_companions``)
MAX_PAGE_COMPANIONS = 2


class _Search:
    """One ``search_chunks`` call: its pools, the live generations and the named documents, and
    its steps (``rank``, ``boost_named``, ``group_pages``, ``candidates``, ``rerank``)."""

    def __init__(
        self,
        store: Store,
        query: str,
        query_vector: np.ndarray | Callable[[], np.ndarray] | None,
        search_type: SearchType,
        limit: int,
        document_ids: Sequence[str] | None,
        settings: SearchSettings,
        reranker: Reranker | None,
        notices: list[str] | None = None,
    ) -> None:
        self.store, self.query, self.query_vector = store, query, query_vector
        self.notices = notices
        self.search_type, self.limit, self.settings = search_type, limit, settings
        self.document_ids = document_ids
        self.live = store.current_generations()
        self.wanted = max(limit, settings.rerank_pool) if reranker is not None else limit
        self.grouped = settings.page_share is not None
        self.reranking = reranker is not None  # then pages are taken after it, not at fusion
        self.demoted: set[str] = set()  # the reference chunks demoted at fusion
        self.companions: dict[str, list[str]] = {}  # a page result's chunk id -> its companions
        # a page's score needs its other chunks, so grouped single-arm searches look as deep as hybrid
        pool = max(limit * settings.candidate_factor, 20) if search_type == "hybrid" or self.grouped else limit * 2
        self.pool = max(pool, self.wanted)
        self.named = _named(store, query, document_ids) if settings.name_weight > 0 else {}
        # the named documents' own best candidates join each arm's pool (skipped when they are
        # most of what is searched: the plain pool already speaks for them)
        searched = len(document_ids) if document_ids is not None else len(self.live)
        self.named_scope = sorted(self.named) if self.named and len(self.named) * 2 <= searched else None

    def deepen(self, ranking: _Ranking) -> bool:
        """Grow the pools for another try; False when they cannot grow or found all there is."""
        if not ranking.full or self.pool >= MAX_GROUPED_POOL:
            return False
        self.pool = min(self.pool * 4, MAX_GROUPED_POOL)
        return True

    def rare_name_hits(self, text_scored: list[tuple[str, float]]) -> set[str]:
        """The full-text hits holding a name the query writes with a capital ("SLEREXE",
        "Cundall") that at most RARE_NAME_HITS chunks hold: what a question naming it is
        after ("What does the SLEREXE company letter say?" ranked a book's chunks of
        "company" and "letter" above the one letter that names it). One small full-text
        query per such name, at most MAX_RARE_NAMES of them."""
        hits = {cid for cid, _ in text_scored}
        found: set[str] = set()
        for name in _capitalised_names(self.query)[:MAX_RARE_NAMES]:
            holding = [h["id"] for h in fts_hits(self.store, name, RARE_NAME_HITS + 1, self.document_ids) if self.current(h)]
            if len(holding) <= RARE_NAME_HITS:
                found.update(cid for cid in holding if cid in hits)
        return found

    def current(self, hit: dict[str, Any]) -> bool:
        # Leftovers of an interrupted write are invisible until recovery removes them.
        return self.live.get(hit["document_id"]) == hit["generation"]

    # --- the arms and their fusion ------------------------------------------------------------

    def text_arm(self, size: int) -> list[dict[str, Any]]:
        hits = fts_hits(self.store, self.query, size, self.document_ids)
        if self.named_scope:
            hits = _union(hits, fts_hits(self.store, self.query, size, self.named_scope), "id")
        return [h for h in hits if self.current(h)]

    def vector_arm(self, size: int) -> list[dict[str, Any]]:
        if self.query_vector is None:
            raise ValueError("vector search needs a query vector")
        vector = self.query_vector() if callable(self.query_vector) else self.query_vector
        self.query_vector = vector  # embedded once, should the search look deeper
        hits = vector_hits(self.store, vector, size, self.document_ids)
        if self.named_scope:
            hits = _union(hits, vector_hits(self.store, vector, size, self.named_scope), "chunk_id")
        return [h for h in hits if self.current(h)]

    def rank(self) -> _Ranking:
        """Run the arms the search type asks for and fuse them."""
        if self.search_type == "fts":
            ranking = self._text_ranking()
        elif self.search_type == "vector":
            ranking = self._vector_ranking()
        elif self.search_type == "hybrid":
            ranking = self._hybrid_ranking()
        else:
            raise ValueError(f"unknown search type {self.search_type!r}; use one of {', '.join(SEARCH_TYPES)}")
        ranking.document_of.update({cid: row["document_id"] for cid, row in ranking.rows.items()})
        return ranking

    def _text_ranking(self) -> _Ranking:
        hits = self.text_arm(self.pool)
        scored = [(h["id"], float(h["_score"])) for h in hits]
        return _Ranking(
            scored,
            rows={h["id"]: h for h in hits},
            row_of=_row_ids(hits),
            text_hits={h["id"] for h in hits},
            text_ran=True,
            full=len(hits) >= self.pool,
        )

    def _vector_ranking(self) -> _Ranking:
        vec_hits = self.vector_arm(self.pool)
        return _Ranking(
            [(h["chunk_id"], 1.0 - float(h["_distance"])) for h in vec_hits],
            document_of={h["chunk_id"]: h["document_id"] for h in vec_hits},
            page_of=_first_pages(vec_hits),
            row_of=_chunk_rows(vec_hits),
            full=len(vec_hits) >= self.pool,
        )

    def _hybrid_ranking(self) -> _Ranking:
        settings = self.settings
        # explicit per-arm pools win, even below the limit: fusion still returns what both give
        text_pool = settings.fts_pool or self.pool
        vec_pool = settings.vector_pool or self.pool
        # The full-text arm runs on another thread while this one embeds the query (when
        # ``query_vector`` is a callable) and ranks vectors: the two arms take similar time.
        text_future = _arm_pool().submit(self.text_arm, text_pool) if settings.fts_weight else None
        vec_hits: list[dict[str, Any]] = []
        try:
            if self.query_vector is not None and settings.vector_weight:
                try:
                    vec_hits = self.vector_arm(vec_pool)
                except EmbeddingError as exc:
                    message = f"full-text results only: the query could not be embedded ({exc})"
                    log.warning("hybrid search: %s", message)
                    if self.notices is not None:
                        self.notices.append(message)
        finally:
            text_hits = text_future.result() if text_future else []
        ranking = _Ranking(
            [],
            rows={h["id"]: h for h in text_hits},
            document_of={h["chunk_id"]: h["document_id"] for h in vec_hits},
            page_of=_first_pages(vec_hits),
            row_of={**_chunk_rows(vec_hits), **_row_ids(text_hits)},
            text_hits={h["id"] for h in text_hits},
            text_ran=text_future is not None,
            full=(not settings.fts_pool and len(text_hits) >= text_pool)
            or (not settings.vector_pool and len(vec_hits) >= vec_pool),
        )
        text_scored = [(h["id"], float(h["_score"])) for h in text_hits]
        vec_scored = [(h["chunk_id"], 1.0 - float(h["_distance"])) for h in vec_hits]
        weights = (settings.fts_weight, settings.vector_weight)
        if settings.fusion == "score":
            named = self.rare_name_hits(text_scored) if settings.dominant_ratio and vec_scored else set()
            ranking.scored = _fuse_scores(
                self.store, text_scored, vec_scored, ranking.rows, weights, settings.fts_only_share,
                settings.dominant_ratio, named,
            )
        else:
            ranking.scored = reciprocal_rank_fusion(
                [[cid for cid, _ in text_scored], [cid for cid, _ in vec_scored]], k=settings.rrf_k, weights=list(weights)
            )
        return ranking

    # --- after fusion -------------------------------------------------------------------------

    def boost_named(self, scored: list[tuple[str, float]], ranking: _Ranking) -> list[tuple[str, float]]:
        """Documents the query names rank higher (``naming.boost_named``)."""
        if self.search_type != "hybrid" or self.settings.fusion != "score":
            scored = score_fusion([scored], [1.0])  # onto score fusion's 0 … 1 scale per arm
        return boost_named(scored, ranking.document_of, self.named, self.settings.name_weight)

    def demote_references(self, scored: list[tuple[str, float]], ranking: _Ranking) -> list[tuple[str, float]]:
        """Chunks of reference lists keep ``reference_weight`` of their score (a negative score,
        as cosine can be, moves as far down), unless no chunk outside them matched the query's
        words: then they are what matched, and keep their place.

        Only the candidates that can still reach the results after the demotion are read and
        judged (``_reachable``); their whole rows are kept for the results."""
        weight = self.settings.reference_weight
        self.demoted = set()
        judged = self._judge(self._reachable(scored, ranking, weight), ranking)
        references = {cid for cid, is_reference in judged.items() if is_reference}
        if not references:
            return scored
        if ranking.text_ran and ranking.text_hits:
            # nothing else matches: every full-text hit is a reference chunk (those not judged
            # yet, ranked lower, are judged now: rare, as most queries' words occur elsewhere)
            unjudged = [cid for cid in ranking.text_hits if cid not in judged]
            if not any(judged.get(cid) is False for cid in ranking.text_hits) and unjudged:
                judged.update(self._judge(unjudged, ranking))
                references |= {cid for cid in unjudged if judged.get(cid)}
            if all(judged.get(cid, True) for cid in ranking.text_hits):
                return scored
        self.demoted = references
        demoted = [(cid, score - (1 - weight) * abs(score) if cid in references else score) for cid, score in scored]
        return sorted(demoted, key=lambda pair: -pair[1])

    def _reachable(self, scored: list[tuple[str, float]], ranking: _Ranking, weight: float) -> list[str]:
        """The candidates whose place a demotion could change among the results: those scoring at
        least the demoted score of the ``wanted``-th result (page, when grouped: a page's score
        is its best chunk's), since each of the first ``wanted`` keeps at least that much. With
        a page share above 0 a page sums its chunks: all are judged. With a reranker, pages are
        taken after it: the fused pool it reorders is one of chunks."""
        share = self.settings.page_share if not self.reranking else None
        if share:
            return [cid for cid, _ in scored]

        def demoted(score: float) -> float:
            return score - (1 - weight) * abs(score)

        # with pages, a chunk below its page's best demoted is never the page's result either
        key = {cid: self._page_of(cid, ranking) if share is not None else cid for cid, _ in scored}
        best: dict[tuple[str, int] | str, float] = {}
        cut = None
        for cid, score in scored:
            best.setdefault(key[cid], score)
            if cut is None and len(best) == self.wanted:
                cut = demoted(score)
        return [
            cid for cid, score in scored if (cut is None or score >= cut) and score >= demoted(best[key[cid]])
        ]

    def _page_of(self, cid: str, ranking: _Ranking) -> tuple[str, int] | str:
        """The page key of a candidate when it is known without reading its row, else its id."""
        if cid in ranking.rows and "page_numbers" in ranking.rows[cid]:
            return page_key(Candidate(cid, 0.0, ranking.rows[cid]["document_id"], ranking.rows[cid]["page_numbers"] or []))
        if cid in ranking.page_of and cid in ranking.document_of:
            page = ranking.page_of[cid]
            return page_key(Candidate(cid, 0.0, ranking.document_of[cid], [] if page is None else [page]))
        return cid

    def _judge(self, chunk_ids: Sequence[str], ranking: _Ranking) -> dict[str, bool]:
        """Whether each chunk (whose row is still current) belongs to a reference list. Chunks
        judged by an earlier search are known by id (``_JUDGED``); the others' whole rows are
        read in one query and kept for the results."""
        # .get: another search's thread may clear the dict between a test and a read
        known = {cid: _JUDGED.get(cid) for cid in chunk_ids}
        judged = {cid: value for cid, value in known.items() if value is not None}
        unknown = [cid for cid in chunk_ids if cid not in judged]
        _fetch_rows(self.store, ranking.rows, unknown, self.current, ranking.row_of, complete=True)
        if len(_JUDGED) > _JUDGED_MAX:
            _JUDGED.clear()
        for cid in unknown:
            if cid in ranking.rows:
                row = ranking.rows[cid]
                judged[cid] = _JUDGED[cid] = is_reference_chunk(row["headings"], row["content"])
        return judged

    def group_pages(
        self, scored: list[tuple[str, float]], ranking: _Ranking, page_share: float
    ) -> list[tuple[str, float]]:
        """One result per page (``pages.aggregate_pages``)."""
        # full-text hits carry their rows and exact vector hits their first page: rows are read
        # only for hits with neither (beyond the exact-search budget, the ANN's whose chunks the
        # store's page map does not hold yet: see store/vectors.PageMap)
        rows, page_of = ranking.rows, ranking.page_of
        _fetch_rows(self.store, rows, [cid for cid, _ in scored if cid not in page_of], self.current, ranking.row_of)
        known = [(cid, score) for cid, score in scored if cid in rows or cid in page_of]
        candidates = [_candidate(cid, s, rows, ranking.document_of, page_of) for cid, s in known]
        pages = aggregate_pages(candidates, page_share)
        ratio = self.settings.page_companion_ratio
        if ratio > 0:
            kept = [cid for cid, _ in pages[: self.wanted]]
            self.companions = page_companions(candidates, kept, ratio, MAX_PAGE_COMPANIONS)
        return pages

    def with_companions(self, results: list[SearchResult], ranking: _Ranking) -> list[SearchResult]:
        """Each page result with its companions joined (``merge_page``), in reading order."""
        wanted = [cid for r in results for cid in self.companions.get(r.chunk_id, [])]
        if not wanted:
            return results
        rows = self.candidates([(cid, 0.0) for cid in wanted], ranking)
        found = {r.chunk_id: r for r in to_results(self.store, rows)}
        return [
            merge_page(r, [found[cid] for cid in self.companions.get(r.chunk_id, []) if cid in found])
            for r in results
        ]

    def candidates(self, scored: list[tuple[str, float]], ranking: _Ranking) -> list[tuple[dict[str, Any], float]]:
        """The whole rows of the chunks kept, in order (a chunk gone since it was ranked drops)."""
        _fetch_rows(self.store, ranking.rows, [cid for cid, _ in scored], self.current, ranking.row_of, complete=True)
        return [(ranking.rows[cid], score) for cid, score in scored if cid in ranking.rows]

    def rerank(
        self, reranker: Reranker, candidates: list[tuple[dict[str, Any], float]]
    ) -> list[tuple[dict[str, Any], float]]:
        # the reranker sees chunks; pages are taken from its order after (each page once)
        candidates, scored = reranked(reranker, self.query, candidates, len(candidates) if self.grouped else self.limit)
        if self.demoted and scored:
            # the reranker's scores are demoted as the fused ones were (the same chunks: the
            # query did not ask for references and other chunks matched its words)
            weight = self.settings.reference_weight
            head = [
                (row, score - (1 - weight) * abs(score) if row["id"] in self.demoted else score)
                for row, score in candidates[:scored]
            ]
            candidates = sorted(head, key=lambda pair: -pair[1]) + candidates[scored:]
        return _first_per_page(candidates) if self.grouped else candidates


def _first_pages(vec_hits: list[dict[str, Any]]) -> dict[str, int | None]:
    return {h["chunk_id"]: h["first_page"] for h in vec_hits if "first_page" in h}


def _chunk_rows(vec_hits: list[dict[str, Any]]) -> dict[str, int]:
    return {h["chunk_id"]: h["chunk_row"] for h in vec_hits if "chunk_row" in h}


def _row_ids(text_hits: list[dict[str, Any]]) -> dict[str, int]:
    return {h["id"]: h["_rowid"] for h in text_hits if h.get("_rowid") is not None}


def _candidate(
    cid: str, score: float, rows: dict[str, Any], document_of: dict[str, str], page_of: dict[str, int | None]
) -> Candidate:
    """A grouping candidate from its row, or from its vector hit's document and first page
    (the same page key: ``page_key`` reads only the lowest page)."""
    if cid in rows:
        return Candidate(cid, score, rows[cid]["document_id"], rows[cid]["page_numbers"] or [])
    page = page_of[cid]
    return Candidate(cid, score, document_of[cid], [] if page is None else [page])


def _first_per_page(candidates: list[tuple[dict[str, Any], float]]) -> list[tuple[dict[str, Any], float]]:
    seen: set[tuple[str, int] | str] = set()
    kept = []
    for row, score in candidates:
        key = page_key(Candidate(row["id"], score, row["document_id"], row["page_numbers"] or []))
        if key not in seen:
            seen.add(key)
            kept.append((row, score))
    return kept


def _union(hits: list[dict[str, Any]], more: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """One arm's global and named-scope hits, each id once, best first: both searches score a
    chunk alike (BM25 over the whole index, cosine), so the union orders like one search."""
    seen = {hit[key]: hit for hit in hits}
    merged = hits + [hit for hit in more if hit[key] not in seen]
    if key == "chunk_id":
        return sorted(merged, key=lambda h: float(h["_distance"]))
    return sorted(merged, key=lambda h: -float(h["_score"]))


def _fetch_rows(
    store: Store,
    rows: dict[str, dict[str, Any]],
    chunk_ids: Sequence[str],
    current: Callable[[dict[str, Any]], bool],
    row_of: dict[str, int] | None = None,
    *,
    complete: bool = False,
) -> None:
    """Add the chunk rows of ``chunk_ids`` that ``rows`` lacks (vector-only hits); with
    ``complete``, also replace the full-text hits' ranking columns (``_FTS_COLUMNS``) with
    their whole rows, as results need.

    Those whose row id is known (``row_of``: the full-text query's, or the one the exact-search
    matrix holds) are read by it: ~5.7 against ~9 ms for 10 rows of a 100k-chunk table by an id
    lookup (session 13). A row read so is kept only if it is the chunk asked for (a table
    without stable row ids moves rows when it compacts); the others are looked up by id, as all
    were before."""
    missing = {cid for cid in chunk_ids if cid not in rows or (complete and "content" not in rows[cid])}
    if not missing:
        return
    table = store.table(S.CHUNKS)
    by_row = sorted({row_of[cid] for cid in missing if row_of and cid in row_of})
    if by_row:
        for row in table.take_row_ids(by_row).select(_CHUNK_COLUMNS).to_list():
            if row["id"] in missing:
                missing.discard(row["id"])
                if current(row):
                    rows[row["id"]] = row
    if missing:
        fetched = table.search().where(sql_in("id", missing)).select(_CHUNK_COLUMNS).limit(None).to_list()
        rows.update({r["id"]: r for r in fetched if current(r)})
    if complete:  # a hit whose whole row is gone since it was ranked is not a result
        for cid in chunk_ids:
            if cid in rows and "content" not in rows[cid]:
                del rows[cid]


def _named(store: Store, query: str, document_ids: Sequence[str] | None) -> dict[str, float]:
    return named_documents(query, store.document_labels(), document_ids)


def reranked(
    reranker: Reranker, query: str, candidates: list[tuple[dict[str, Any], float]], limit: int
) -> tuple[list[tuple[dict[str, Any], float]], int]:
    """``candidates`` in the reranker's order with its scores, and how many it scored; the
    fused order and 0 if it fails.

    Candidates the reranker left out (a server that returned fewer than ``limit``) follow in
    their fused order, with their fused scores.
    """
    try:
        order = reranker.rerank(query, [row["content"] for row, _ in candidates], min(limit, len(candidates)))
    except Exception as exc:  # any failure of an optional stage: never fail the search
        log.warning(
            "reranking failed, keeping the fused order (%s from %s): %s",
            type(exc).__name__,
            getattr(reranker, "description", type(reranker).__name__),
            exc,
        )
        return candidates, 0
    chosen = [(candidates[index][0], score) for index, score in order]
    taken = {index for index, _ in order}
    return chosen + [pair for i, pair in enumerate(candidates) if i not in taken], len(chosen)


def merge_page(result: SearchResult, companions: list[SearchResult]) -> SearchResult:
    """``result`` with its page companions: one passage of the chunks in reading order, with
    the result's score and path; each chunk's own text, boxes, pages and path kept by id (as
    context expansion keeps a merged result's), so each stays citable and lit by itself."""
    if not companions:
        return result
    parts = sorted([result, *companions], key=lambda r: r.order)
    return result.model_copy(
        update={
            "chunk_ids": [r.chunk_id for r in parts],
            "content": "\n\n".join(r.content for r in parts),
            "labels": list(dict.fromkeys(label for r in parts for label in r.labels)),
            "doc_item_refs": list(dict.fromkeys(ref for r in parts for ref in r.doc_item_refs)),
            "matched_refs": list(dict.fromkeys(ref for r in parts for ref in r.matched_refs)),
            "page_numbers": sorted({p for r in parts for p in r.page_numbers}),
            "boxes": [b for r in parts for b in r.boxes],
            "chunk_boxes": {r.chunk_id: r.boxes for r in parts},
            "chunk_texts": {r.chunk_id: r.content for r in parts},
            "chunk_pages": {r.chunk_id: r.page_numbers for r in parts},
            "chunk_headings": {r.chunk_id: r.headings for r in parts},
        }
    )


def to_results(store: Store, scored_rows: list[tuple[dict[str, Any], float]]) -> list[SearchResult]:
    """Attach document identity to chunk rows (one query for all documents)."""
    labels = store.document_labels() if scored_rows else {}
    results = []
    for row, score in scored_rows:
        label = labels.get(row["document_id"])
        if label is None:
            continue
        uri, title, metadata = label
        results.append(
            SearchResult(
                chunk_id=row["id"],
                chunk_ids=[row["id"]],
                score=score,
                content=row["content"],
                document_id=row["document_id"],
                document_uri=uri,
                document_title=title,
                document_meta=json.loads(metadata or "{}"),
                order=row["order"],
                headings=row["headings"] or [],
                labels=row["labels"] or [],
                doc_item_refs=row["doc_item_refs"] or [],
                page_numbers=row["page_numbers"] or [],
                boxes=boxes_from_json(row["boxes"]),
                matched_refs=row["doc_item_refs"] or [],
            )
        )
    return results
