"""Exact vector search in memory, for libraries whose vectors fit the exact-search budget.

LanceDB's flat scan re-reads and decodes the vectors table on every query (~40–60 ms at 20k
chunks on two cores), and its ANN index trades recall for speed. While the vectors fit a
memory budget (``EXACT_SEARCH_BUDGET_BYTES``: 160 MiB, ~108k vectors of 384 float32), one
matrix-vector product ranks them exactly: ~5 ms at 20k, ~9–17 ms at 100k on two cores
(split over two threads from ``SPLIT_PRODUCT_ROWS``).
The matrix is loaded on the first vector search, reloaded when the table's version changes
(any write, from any process) and dropped by ``Store.release_caches`` when the library is
idle. Beyond the budget, searches go to LanceDB's ANN index, and ``PageMap`` gives its hits
their chunks' first pages.

Beside each vector the matrix keeps its chunk's first page (read from the chunks table when
the matrix loads): page grouping (``search/pages.py``) needs every pooled candidate's page, and
without it each search read the pool's chunk rows in one more query (~3.5 ms of p95 at 100k).

float32, not float16: numpy has no fast half-precision product here (an fp16 matrix converted
block by block ran ~10x slower than the fp32 product), so halving the memory would cost the
latency it is meant to buy.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

# The memory the exact-search matrix may take; above it searches use the ANN index.
EXACT_SEARCH_BUDGET_BYTES = 160 * 1024 * 1024
# What a row costs beside its float32 vector: its document code and first page (int32 each)
# and its chunk's row id (int64).
ROW_EXTRA_BYTES = 16
# ``first_pages`` values that are not pages: the chunk has none (Markdown, imported text); its
# chunk row was not found when the matrix loaded (callers then read the row to know).
NO_PAGE = -1
PAGE_UNKNOWN = -2


def fits_exact_budget(rows: int, dim: int, budget_bytes: int = EXACT_SEARCH_BUDGET_BYTES) -> bool:
    """Whether ``rows`` vectors of ``dim`` float32 (and their int32 columns) fit the budget."""
    return rows * (dim * 4 + ROW_EXTRA_BYTES) <= budget_bytes


@dataclass(frozen=True)
class VectorMatrix:
    chunk_ids: np.ndarray  # str (object), one per row
    generations: np.ndarray  # str (object), one per row
    document_codes: np.ndarray  # int32 per row: index into ``documents``
    documents: dict[str, int]  # document id -> code
    document_names: list[str]  # code -> document id
    vectors: np.ndarray  # (rows, dim) float32, unit length: a dot product is the cosine
    first_pages: np.ndarray  # int32 per row: the chunk's lowest page, NO_PAGE or PAGE_UNKNOWN
    # int64 per row: its chunk's row id in the chunks table when the matrix loaded, or -1.
    # With stable row ids (new stores) it still names the row after compaction, and the hits'
    # rows are read by it (``take_row_ids``) instead of a lookup of their ids; callers check
    # each row read is the chunk asked for, as a table without stable row ids moves its rows.
    chunk_rows: np.ndarray
    next_row_id: int = 0  # first row id of the fragment after the newest one loaded

    @classmethod
    def load(cls, table: Any, chunks: Any = None) -> VectorMatrix:
        """The vectors of ``table``; with ``chunks`` (the chunks table) their chunks' pages."""
        return cls._from_rows(cls._read(table), chunks)

    def extended(self, table: Any, chunks: Any = None) -> VectorMatrix | None:
        """This matrix plus the rows appended to ``table`` since it was loaded, or None when
        the table changed otherwise (rows deleted, fragments compacted): then load it whole.

        Appends are what ingestion does (a write per batch of vectors), and re-reading 100k
        vectors after each one took 1–3 s of the next search. Row ids are (fragment << 32 |
        offset) and appends make new fragments, so the new rows are those from the next
        fragment id on; if the table's row count is not exactly the old plus those, something
        was deleted or rewritten and the caller reloads.
        """
        added = self._read(table, f"_rowid >= {self.next_row_id}")
        if len(self) + added.num_rows != table.count_rows():
            return None
        if not added.num_rows:
            return self
        more = VectorMatrix._from_rows(added, chunks)
        names = list(self.document_names)
        documents = dict(self.documents)
        for name in more.document_names:
            if name not in documents:
                documents[name] = len(names)
                names.append(name)
        remap = np.asarray([documents[name] for name in more.document_names], dtype=np.int32)
        return VectorMatrix(
            chunk_ids=np.concatenate([self.chunk_ids, more.chunk_ids]),
            generations=np.concatenate([self.generations, more.generations]),
            document_codes=np.concatenate([self.document_codes, remap[more.document_codes]]),
            documents=documents,
            document_names=names,
            vectors=np.concatenate([self.vectors, more.vectors]) if len(self) else more.vectors,
            first_pages=np.concatenate([self.first_pages, more.first_pages]),
            next_row_id=max(self.next_row_id, more.next_row_id),
            chunk_rows=np.concatenate([self.chunk_rows, more.chunk_rows]),
        )

    @staticmethod
    def _read(table: Any, where: str | None = None) -> Any:
        query = table.search().with_row_id(True)
        if where:
            query = query.where(where)
        return query.select(["chunk_id", "document_id", "generation", "vector"]).limit(None).to_arrow()

    @classmethod
    def _from_rows(cls, rows: Any, chunks: Any = None) -> VectorMatrix:
        count = rows.num_rows
        if count:
            flat = rows["vector"].combine_chunks().values.to_numpy(zero_copy_only=False)
            vectors = np.asarray(flat, dtype=np.float32).reshape(count, -1).copy()
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            np.divide(vectors, np.where(norms == 0, 1, norms), out=vectors)
            row_ids = rows["_rowid"].to_numpy(zero_copy_only=False).astype(np.uint64)
            next_row_id = int((int(row_ids.max()) >> 32) + 1) << 32
        else:
            vectors = np.zeros((0, 0), dtype=np.float32)
            next_row_id = 0
        # Documents as small integer codes: a scoped search masks rows with one vectorised
        # lookup instead of comparing 100k strings.
        encoded = rows["document_id"].combine_chunks().dictionary_encode() if count else None
        names = encoded.dictionary.to_pylist() if encoded is not None else []
        codes = (
            encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
            if encoded is not None
            else np.zeros(0, dtype=np.int32)
        )
        pages, chunk_rows = _chunk_pages_and_rows(chunks, rows["chunk_id"], rows["document_id"])
        return cls(
            chunk_ids=np.asarray(rows["chunk_id"].to_pylist(), dtype=object),
            generations=np.asarray(rows["generation"].to_pylist(), dtype=object),
            document_codes=codes,
            documents={name: code for code, name in enumerate(names)},
            document_names=names,
            vectors=vectors,
            first_pages=pages,
            next_row_id=next_row_id,
            chunk_rows=chunk_rows,
        )

    def __len__(self) -> int:
        return len(self.chunk_ids)

    @property
    def nbytes(self) -> int:
        return int(self.vectors.nbytes + self.document_codes.nbytes + self.first_pages.nbytes + self.chunk_rows.nbytes)

    def nearest(self, query: np.ndarray, limit: int, document_ids: Collection[str] | None) -> list[dict[str, Any]]:
        """Rows in the shape LanceDB returns (``_distance`` = cosine distance), best first, plus
        ``first_page`` (the chunk's lowest page, None when it has none) where it is known."""
        if not len(self) or limit <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(q))
        scores = product(self.vectors, q / norm if norm else q)
        if document_ids is not None:
            wanted = [self.documents[d] for d in document_ids if d in self.documents]
            allowed = np.zeros(len(self.document_names), dtype=bool)
            allowed[wanted] = True
            scores = np.where(allowed[self.document_codes], scores, -np.inf)
        candidates = int(np.count_nonzero(np.isfinite(scores)))
        take = min(limit, candidates)
        if take == 0:
            return []
        top = np.argpartition(-scores, take - 1)[:take] if take < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")][:take]
        hits = []
        for i in top:
            if not np.isfinite(scores[i]):
                continue
            hit = {
                "chunk_id": self.chunk_ids[i],
                "document_id": self.document_names[self.document_codes[i]],
                "generation": self.generations[i],
                "_distance": float(1.0 - scores[i]),
            }
            page = int(self.first_pages[i])
            if page != PAGE_UNKNOWN:
                hit["first_page"] = None if page == NO_PAGE else page
            if self.chunk_rows[i] >= 0:
                hit["chunk_row"] = int(self.chunk_rows[i])
            hits.append(hit)
        return hits


# From this many rows the product is split in two halves, the second on a helper thread: it
# reads the whole matrix (150 MB at 100k x 384), and one core's memory bandwidth bounds it
# (17.8 ms at 100k on a 2-core Xeon VM, 9.3 ms on two threads). Below, handing work to a
# thread costs more than it saves.
SPLIT_PRODUCT_ROWS = 32_768
_PRODUCT_POOL: Any = None
_PRODUCT_POOL_LOCK = threading.Lock()


def product(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``vectors @ query`` as float32, on two threads for a large matrix.

    einsum, not ``@``: BLAS's worker threads spin after a product and took the cores the next
    query embedding needed (MiniLM 11 -> 20 ms). einsum's loop is single-threaded and releases
    the GIL, so the helper thread computes one half while this thread computes the other; the
    helper waits on a queue between products (blocked, not spinning).
    """
    rows = len(vectors)
    scores = np.empty(rows, dtype=np.float32)
    if rows < SPLIT_PRODUCT_ROWS:
        np.einsum("ij,j->i", vectors, query, out=scores)
        return scores
    half = rows // 2
    second = _product_pool().submit(np.einsum, "ij,j->i", vectors[half:], query, out=scores[half:])
    try:
        np.einsum("ij,j->i", vectors[:half], query, out=scores[:half])
    finally:
        second.result()  # never return (or raise) while the helper still writes into scores
    return scores


def _product_pool() -> Any:
    global _PRODUCT_POOL
    with _PRODUCT_POOL_LOCK:
        if _PRODUCT_POOL is None:
            from concurrent.futures import ThreadPoolExecutor

            _PRODUCT_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="haiku-rag-product")
        return _PRODUCT_POOL


def _chunk_pages_and_rows(chunks: Any, chunk_ids: Any, document_ids: Any) -> tuple[np.ndarray, np.ndarray]:
    """The lowest page of each of ``chunk_ids``' chunk rows in ``chunks`` (NO_PAGE for a chunk
    without pages, PAGE_UNKNOWN without ``chunks`` or a row), as int32, and each one's row id
    there (-1 without a row), as int64.

    One read of the chunks' ids and pages (of the documents concerned, when that is fewer than
    all) and a hash join in Arrow: ~0.1 s at 100k chunks, once per load, never per search. A
    chunk's pages never change under its id (a new version of a document has new chunk ids),
    so they stay right for as long as the vector row does.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from haiku.rag.store.sql import sql_in

    count = len(chunk_ids)
    pages = np.full(count, PAGE_UNKNOWN, dtype=np.int32)
    row_ids = np.full(count, -1, dtype=np.int64)
    if chunks is None or not count:
        return pages, row_ids
    documents = pc.unique(document_ids)
    query = chunks.search()
    if len(documents) <= _DOCUMENTS_FILTERED:  # an append's few documents: read only theirs
        query = query.where(sql_in("document_id", set(documents.to_pylist())))
    rows = query.select(["id", "page_numbers"]).with_row_id(True).limit(None).to_arrow()
    lowest = _lowest_pages(rows["page_numbers"].combine_chunks())
    where = pc.fill_null(pc.index_in(chunk_ids, value_set=rows["id"].combine_chunks()), -1)
    where = where.to_numpy(zero_copy_only=False) if isinstance(where, pa.Array) else where.combine_chunks().to_numpy()
    found = where >= 0
    pages[found] = lowest[where[found]]
    row_ids[found] = rows["_rowid"].to_numpy().astype(np.int64)[where[found]]
    return pages, row_ids


def _lowest_pages(lists: Any) -> np.ndarray:
    """The lowest page of each list of an Arrow list array (NO_PAGE for empty or null), int32."""
    import pyarrow.compute as pc

    lowest = np.full(len(lists), NO_PAGE, dtype=np.int32)
    values = pc.list_flatten(lists)  # null lists hold no values
    parents = pc.list_parent_indices(lists)
    valid = pc.is_valid(values)
    values = values.filter(valid).to_numpy(zero_copy_only=False).astype(np.int32)
    parents = parents.filter(valid).to_numpy(zero_copy_only=False)
    if len(values):
        starts = np.flatnonzero(np.r_[True, parents[1:] != parents[:-1]])  # one run per list
        lowest[parents[starts]] = np.minimum.reduceat(values, starts)
    return lowest


# Beyond the budget a chunk id and its first page take this much at most (~40 bytes a chunk
# with uuid-hex ids: 40 MB at 1M chunks); a larger library reads its ANN hits' rows instead.
PAGE_MAP_BUDGET_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class PageMap:
    """Each chunk's first page by chunk id, for vector hits beyond the exact-search budget.

    There the ANN index returns chunk ids without pages, and page grouping read the chunk rows
    of every pooled hit (~40 for a hybrid search of limit 10: a B-tree lookup and random reads
    in a 1M-row table) in one more query per search. The map is read once (``Store.prewarm``,
    in the background) from the chunks table's ids and pages; a chunk's pages never change under
    its id and ids are never reused, so a found id's page is right for as long as its vector
    is. Chunks written after the read are not in it: their rows are read as before.
    """

    ids: np.ndarray  # sorted chunk ids, as fixed-width bytes
    pages: np.ndarray  # int32 per id: its lowest page, or NO_PAGE

    @classmethod
    def load(cls, chunks: Any) -> PageMap:
        import pyarrow as pa
        import pyarrow.compute as pc

        rows = chunks.search().select(["id", "page_numbers"]).limit(None).to_arrow()
        ids = pc.cast(rows["id"].combine_chunks(), pa.binary()).to_numpy(zero_copy_only=False).astype(np.bytes_)
        pages = _lowest_pages(rows["page_numbers"].combine_chunks())
        order = np.argsort(ids, kind="stable")
        return cls(ids=ids[order], pages=pages[order])

    @property
    def nbytes(self) -> int:
        return int(self.ids.nbytes + self.pages.nbytes)

    def first_pages(self, chunk_ids: list[str]) -> list[int]:
        """The lowest page of each of ``chunk_ids`` (NO_PAGE: none; PAGE_UNKNOWN: not in the map)."""
        if not chunk_ids or not len(self.ids):
            return [PAGE_UNKNOWN] * len(chunk_ids)
        width = self.ids.dtype.itemsize
        keys = [c.encode() for c in chunk_ids]
        # an id longer than the map's widest cannot be in it (and would compare truncated)
        fits = np.asarray([len(k) <= width for k in keys])
        wanted = np.asarray([k if f else b"" for k, f in zip(keys, fits, strict=True)], dtype=self.ids.dtype)
        at = np.minimum(np.searchsorted(self.ids, wanted), len(self.ids) - 1)
        found = fits & (self.ids[at] == wanted)
        return [int(self.pages[i]) if ok else PAGE_UNKNOWN for i, ok in zip(at, found, strict=True)]


# Up to this many documents, a load reads only their chunk rows; beyond, the whole table.
_DOCUMENTS_FILTERED = 500
