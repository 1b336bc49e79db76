"""A configured, deterministic embedder for search tests: an OpenAI-compatible ``/v1/embeddings``
server on 127.0.0.1 whose vectors the test chooses (``vectors[text]``), else one derived from a
hash of the text. The client embeds through its real HTTP embedder; nothing is swapped in."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from json_server import json_server

MODEL = "fixed-vectors"


def hashed_vector(text: str, dim: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [float(b) - 127.5 for b in (digest * (dim // len(digest) + 1))[:dim]]


@dataclass
class VectorServer:
    dim: int
    url: str = ""
    vectors: dict[str, np.ndarray] = field(default_factory=dict)

    def configure(self, config: Any) -> Any:
        """``config`` with its embeddings pointed at this server."""
        config.embeddings.provider = "openai-compatible"
        config.embeddings.model = MODEL
        config.embeddings.base_url = self.url
        config.embeddings.vector_dim = self.dim
        return config


@contextmanager
def vector_server(dim: int) -> Iterator[VectorServer]:
    state = VectorServer(dim)

    def answer(path: str, body: Any, headers: Any) -> tuple[int, Any]:
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [float(x) for x in state.vectors[text]] if text in state.vectors else hashed_vector(text, state.dim),
            }
            for i, text in enumerate(body["input"])
        ]
        return 200, {"object": "list", "data": data, "model": body["model"]}

    with json_server(answer) as state.url:
        yield state
