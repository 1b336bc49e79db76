"""What every embedder offers, plus small helpers shared by the implementations.

Embedders are synchronous: the library calls them from worker threads, so every
implementation must be safe to call from several threads at once.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from haiku.rag.operations import CancelToken, ProgressCallback


@dataclass(frozen=True, slots=True)
class EmbedderIdentity:
    """What a store records so that it is never searched with vectors from another model."""

    provider: str
    model: str
    vector_dim: int


class Embedder(ABC):
    """Turns text into L2-normalised float32 vectors.

    Queries and documents go through distinct calls because some models expect a different
    prefix or instruction for each.
    """

    @property
    @abstractmethod
    def identity(self) -> EmbedderIdentity: ...

    @abstractmethod
    def embed_query(self, text: str) -> np.ndarray:
        """One vector, shape ``(vector_dim,)``."""

    @abstractmethod
    def embed_documents(
        self,
        texts: Sequence[str],
        *,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> np.ndarray:
        """One row per text, shape ``(len(texts), vector_dim)``, in the order given.

        Reports ``Stage.EMBEDDING`` progress after each batch and checks ``cancel`` before each.
        """

    def close(self) -> None:  # noqa: B027 - most embedders hold nothing to release
        """Release sessions or connections; the embedder must not be used afterwards."""

    def release(self) -> None:  # noqa: B027 - most embedders hold nothing worth releasing
        """Give back memory held between uses (a model session); the embedder stays usable
        and loads what it needs again on its next use. Called when the library is idle."""


def l2_normalised(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32 (all-zero rows stay zero rather than NaN)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class QueryCache:
    """A thread-safe LRU of query vectors: users repeat and refine the same questions."""

    def __init__(self, max_entries: int = 512) -> None:
        self._max_entries = max_entries
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            vector = self._vectors.get(text)
            if vector is None:
                return None
            self._vectors.move_to_end(text)
            # a copy, so that a caller modifying its vector cannot corrupt the cache
            return vector.copy()

    def put(self, text: str, vector: np.ndarray) -> None:
        if self._max_entries <= 0:
            return
        with self._lock:
            self._vectors[text] = vector.copy()
            self._vectors.move_to_end(text)
            while len(self._vectors) > self._max_entries:
                self._vectors.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)


class CachingEmbedder(Embedder):
    """An embedder whose queries (short, often repeated while a user refines a search) are
    served from an LRU cache; documents are never cached."""

    _query_cache: QueryCache

    def embed_query(self, text: str) -> np.ndarray:
        cached = self._query_cache.get(text)
        if cached is not None:
            return cached
        vector = self.embed_documents([text])[0]
        self._query_cache.put(text, vector)
        return vector
