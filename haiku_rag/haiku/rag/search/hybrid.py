"""Full-text, vector and hybrid (reciprocal-rank fusion) search over chunks.

Hybrid search runs both arms with a candidate pool larger than the limit and fuses their
ranks with RRF (score = sum of 1 / (k + rank), k = 60 by default). Chunks whose vectors have not
landed yet still come back through the full-text arm, so a freshly added document is findable
before embedding finishes. A document filter is resolved to document ids first and applied
inside both arms before their limits, so filtered searches never under-return.

Weighted RRF (``search.fusion``) scales each arm's contribution (weight / (k + rank)) and sets
each arm's pool; the defaults are plain RRF. With a reranker (``search.rerank``), a pool of
fused candidates larger than ``limit`` goes to it and only its order is cut to ``limit``; if the
reranker fails, the fused order is kept and a warning logged.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from haiku.rag.store import schema as S
from haiku.rag.store.documents import boxes_from_json
from haiku.rag.store.engine import Store, sql_in
from haiku.rag.store.models import SearchResult

if TYPE_CHECKING:
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
    return search.select([*_CHUNK_COLUMNS, "_score"]).limit(limit).to_list()


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
        search = search.ef(max(ann.ef, limit))
    clause = _document_clause(document_ids)
    if clause:
        search = search.where(clause, prefilter=True)
    return search.select(["chunk_id", "document_id", "generation", "_distance"]).limit(limit).to_list()


def score_fusion(
    arms: Sequence[Sequence[tuple[str, float]]], weights: Sequence[float]
) -> list[tuple[str, float]]:
    """Fuse (id, score) lists by their scores: each arm's scores are min-max normalised over
    its own candidates (1 = its best, 0 = its worst; a lone or all-equal candidate counts 1),
    then summed with the arm's weight (a candidate an arm did not return adds 0 there). Unlike
    RRF this keeps how far apart an arm's candidates are, not only their order. Ties keep
    first-seen order."""
    fused: dict[str, float] = {}
    for hits, weight in zip(arms, weights, strict=True):
        if weight == 0 or not hits:
            continue
        low = min(score for _, score in hits)
        spread = max(score for _, score in hits) - low
        for item, score in hits:
            fused[item] = fused.get(item, 0.0) + weight * ((score - low) / spread if spread > 0 else 1.0)
    return sorted(fused.items(), key=lambda pair: -pair[1])


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


def _arm_pool() -> concurrent.futures.ThreadPoolExecutor:
    global _ARM_POOL
    if _ARM_POOL is None:
        _ARM_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="haiku-rag-search")
    return _ARM_POOL


def search_chunks(
    store: Store,
    query: str,
    *,
    query_vector: np.ndarray | Callable[[], np.ndarray] | None,
    search_type: SearchType = "hybrid",
    limit: int = 5,
    document_ids: Sequence[str] | None = None,
    rrf_k: int = 60,
    candidate_factor: int = 4,
    fts_weight: float = 1.0,
    vector_weight: float = 1.0,
    fts_pool: int | None = None,
    vector_pool: int | None = None,
    reranker: Reranker | None = None,
    rerank_pool: int = 30,
    fusion: Literal["rrf", "score"] = "rrf",
) -> list[SearchResult]:
    """Ranked chunks as ``SearchResult`` (without context expansion).

    The weights and pools shape hybrid fusion only (``fusion``: ``reciprocal_rank_fusion`` or
    ``score_fusion``); an arm of weight 0 is not run. With ``reranker``, the best ``max(rerank_pool, limit)`` candidates
    are reordered by it before the cut to ``limit``.
    """
    if limit <= 0 or not query.strip() or (document_ids is not None and not document_ids):
        return []
    live = store.current_generations()
    wanted = max(limit, rerank_pool) if reranker is not None else limit
    pool = max(limit * candidate_factor, 20) if search_type == "hybrid" else limit * 2
    pool = max(pool, wanted)
    # explicit per-arm pools win, even below the limit: fusion still returns what both give
    text_pool = fts_pool or pool
    vec_pool = vector_pool or pool

    def current(hit: dict[str, Any]) -> bool:
        # Leftovers of an interrupted write are invisible until recovery removes them.
        return live.get(hit["document_id"]) == hit["generation"]

    rows: dict[str, dict[str, Any]] = {}
    scored: list[tuple[str, float]]
    if search_type == "fts":
        hits = [h for h in fts_hits(store, query, pool, document_ids) if current(h)]
        rows = {h["id"]: h for h in hits}
        scored = [(h["id"], float(h["_score"])) for h in hits]
    elif search_type == "vector":
        if query_vector is None:
            raise ValueError("vector search needs a query vector")
        vector = query_vector() if callable(query_vector) else query_vector
        hits = [h for h in vector_hits(store, vector, pool, document_ids) if current(h)]
        scored = [(h["chunk_id"], 1.0 - float(h["_distance"])) for h in hits]
    elif search_type == "hybrid":
        # The full-text arm runs on another thread while this one embeds the query (when
        # ``query_vector`` is a callable) and ranks vectors: the two arms take similar time.
        text_future = _arm_pool().submit(fts_hits, store, query, text_pool, document_ids) if fts_weight else None
        vec_scored: list[tuple[str, float]] = []
        try:
            if query_vector is not None and vector_weight:
                vector = query_vector() if callable(query_vector) else query_vector
                vec_scored = [
                    (h["chunk_id"], 1.0 - float(h["_distance"]))
                    for h in vector_hits(store, vector, vec_pool, document_ids)
                    if current(h)
                ]
        finally:
            text_hits = [h for h in text_future.result() if current(h)] if text_future else []
        rows = {h["id"]: h for h in text_hits}
        if fusion == "score":
            text_scored = [(h["id"], float(h["_score"])) for h in text_hits]
            scored = score_fusion([text_scored, vec_scored], [fts_weight, vector_weight])
        else:
            scored = reciprocal_rank_fusion(
                [[h["id"] for h in text_hits], [cid for cid, _ in vec_scored]],
                k=rrf_k,
                weights=[fts_weight, vector_weight],
            )
    else:
        raise ValueError(f"unknown search type {search_type!r}; use one of {', '.join(SEARCH_TYPES)}")

    scored = scored[:wanted]
    missing = [cid for cid, _ in scored if cid not in rows]
    if missing:
        fetched = store.table(S.CHUNKS).search().where(sql_in("id", set(missing))).select(_CHUNK_COLUMNS).limit(None).to_list()
        rows.update({r["id"]: r for r in fetched if current(r)})
    candidates = [(rows[cid], score) for cid, score in scored if cid in rows]
    if reranker is not None and len(candidates) > 1:
        candidates = reranked(reranker, query, candidates, limit)
    return to_results(store, candidates[:limit])


def reranked(
    reranker: Reranker, query: str, candidates: list[tuple[dict[str, Any], float]], limit: int
) -> list[tuple[dict[str, Any], float]]:
    """``candidates`` in the reranker's order with its scores; the fused order if it fails.

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
        return candidates
    chosen = [(candidates[index][0], score) for index, score in order]
    taken = {index for index, _ in order}
    return chosen + [pair for i, pair in enumerate(candidates) if i not in taken]


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
