"""Exact vector search in memory, for libraries whose vectors fit the exact-search budget.

LanceDB's flat scan re-reads and decodes the vectors table on every query (~40–60 ms at 20k
chunks on two cores), and its ANN index trades recall for speed. While the vectors fit a
memory budget (``EXACT_SEARCH_BUDGET_BYTES``: 160 MB, ~104k vectors of 384 float32), one
matrix-vector product ranks them exactly: ~5 ms at 20k, ~12–17 ms at 100k on these cores.
The matrix is loaded on the first vector search, reloaded when the table's version changes
(any write, from any process) and dropped by ``Store.release_caches`` when the library is
idle. Beyond the budget, searches go to LanceDB's ANN index.

float32, not float16: numpy has no fast half-precision product here (an fp16 matrix converted
block by block ran ~10x slower than the fp32 product), so halving the memory would cost the
latency it is meant to buy.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

# The memory the exact-search matrix may take; above it searches use the ANN index.
EXACT_SEARCH_BUDGET_BYTES = 160 * 1024 * 1024


def fits_exact_budget(rows: int, dim: int, budget_bytes: int = EXACT_SEARCH_BUDGET_BYTES) -> bool:
    """Whether ``rows`` vectors of ``dim`` float32 fit the exact-search budget."""
    return rows * dim * 4 <= budget_bytes


@dataclass(frozen=True)
class VectorMatrix:
    chunk_ids: np.ndarray  # str (object), one per row
    generations: np.ndarray  # str (object), one per row
    document_codes: np.ndarray  # int32 per row: index into ``documents``
    documents: dict[str, int]  # document id -> code
    document_names: list[str]  # code -> document id
    vectors: np.ndarray  # (rows, dim) float32, unit length: a dot product is the cosine
    next_row_id: int = 0  # first row id of the fragment after the newest one loaded

    @classmethod
    def load(cls, table: Any) -> VectorMatrix:
        return cls._from_rows(cls._read(table))

    def extended(self, table: Any) -> VectorMatrix | None:
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
        more = VectorMatrix._from_rows(added)
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
            next_row_id=max(self.next_row_id, more.next_row_id),
        )

    @staticmethod
    def _read(table: Any, where: str | None = None) -> Any:
        query = table.search().with_row_id(True)
        if where:
            query = query.where(where)
        return query.select(["chunk_id", "document_id", "generation", "vector"]).limit(None).to_arrow()

    @classmethod
    def _from_rows(cls, rows: Any) -> VectorMatrix:
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
        return cls(
            chunk_ids=np.asarray(rows["chunk_id"].to_pylist(), dtype=object),
            generations=np.asarray(rows["generation"].to_pylist(), dtype=object),
            document_codes=codes,
            documents={name: code for code, name in enumerate(names)},
            document_names=names,
            vectors=vectors,
            next_row_id=next_row_id,
        )

    def __len__(self) -> int:
        return len(self.chunk_ids)

    @property
    def nbytes(self) -> int:
        return int(self.vectors.nbytes)

    def nearest(self, query: np.ndarray, limit: int, document_ids: Collection[str] | None) -> list[dict[str, Any]]:
        """Rows in the shape LanceDB returns (``_distance`` = cosine distance), best first."""
        if not len(self) or limit <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(q))
        # einsum, not ``@``: BLAS's worker threads spin after a product and took the cores the
        # next query embedding needed (MiniLM 11 -> 20 ms); einsum's loop is single-threaded
        # and at these sizes faster than threaded BLAS on two shared cores.
        scores = np.einsum("ij,j->i", self.vectors, q / norm if norm else q)
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
        return [
            {
                "chunk_id": self.chunk_ids[i],
                "document_id": self.document_names[self.document_codes[i]],
                "generation": self.generations[i],
                "_distance": float(1.0 - scores[i]),
            }
            for i in top
            if np.isfinite(scores[i])
        ]
