"""Exact vector search in memory for libraries below the ANN-index size.

LanceDB's flat scan re-reads and decodes the vectors table on every query: ~40–60 ms at 20k
chunks on two cores, most of a hybrid search's budget. Below ``VECTOR_INDEX_MIN_ROWS`` the
vectors fit comfortably in memory (50k × 384 float32 ≈ 77 MB), and one matrix product ranks
them exactly in a few milliseconds. The matrix is loaded on the first vector search and
reloaded when the table's version changes (any write, from any process). From the ANN-index
size on, searches go to LanceDB's index instead.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class VectorMatrix:
    chunk_ids: list[str]
    document_ids: np.ndarray  # str, one per row
    generations: list[str]
    vectors: np.ndarray  # (rows, dim) float32, unit length: a dot product is the cosine

    @classmethod
    def load(cls, table: Any) -> VectorMatrix:
        rows = table.search().select(["chunk_id", "document_id", "generation", "vector"]).limit(None).to_arrow()
        count = rows.num_rows
        if count:
            flat = rows["vector"].combine_chunks().values.to_numpy(zero_copy_only=False)
            vectors = np.asarray(flat, dtype=np.float32).reshape(count, -1).copy()
        else:
            vectors = np.zeros((0, 0), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True) if count else None
        if norms is not None:
            np.divide(vectors, np.where(norms == 0, 1, norms), out=vectors)
        return cls(
            chunk_ids=rows["chunk_id"].to_pylist(),
            document_ids=np.asarray(rows["document_id"].to_pylist(), dtype=object),
            generations=rows["generation"].to_pylist(),
            vectors=vectors,
        )

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def nearest(self, query: np.ndarray, limit: int, document_ids: Collection[str] | None) -> list[dict[str, Any]]:
        """Rows in the shape LanceDB returns (``_distance`` = cosine distance), best first."""
        if not len(self) or limit <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(q))
        # einsum, not ``@``: BLAS's worker threads spin after a product and took the cores the
        # next query embedding needed (MiniLM 11 -> 20 ms); einsum's loop is single-threaded
        # and at these sizes as fast (~4 ms at 20k x 384).
        scores = np.einsum("ij,j->i", self.vectors, q / norm if norm else q)
        if document_ids is not None:
            allowed = np.isin(self.document_ids, list(document_ids))
            scores = np.where(allowed, scores, -np.inf)
        candidates = int(np.count_nonzero(np.isfinite(scores)))
        take = min(limit, candidates)
        if take == 0:
            return []
        top = np.argpartition(-scores, take - 1)[:take] if take < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")][:take]
        return [
            {
                "chunk_id": self.chunk_ids[i],
                "document_id": self.document_ids[i],
                "generation": self.generations[i],
                "_distance": float(1.0 - scores[i]),
            }
            for i in top
            if np.isfinite(scores[i])
        ]
