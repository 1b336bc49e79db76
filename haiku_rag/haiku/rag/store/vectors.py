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

    @classmethod
    def load(cls, table: Any) -> VectorMatrix:
        rows = table.search().select(["chunk_id", "document_id", "generation", "vector"]).limit(None).to_arrow()
        count = rows.num_rows
        if count:
            flat = rows["vector"].combine_chunks().values.to_numpy(zero_copy_only=False)
            vectors = np.asarray(flat, dtype=np.float32).reshape(count, -1).copy()
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            np.divide(vectors, np.where(norms == 0, 1, norms), out=vectors)
        else:
            vectors = np.zeros((0, 0), dtype=np.float32)
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
