"""Re-embedding a library with another embedder: new vectors are computed before anything is
replaced, so a cancel or a failing server leaves the old vectors and identity intact, and
search keeps working throughout. The embedders are a real OpenAI-compatible HTTP server on
127.0.0.1 that returns deterministic vectors (a different size per model)."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from json_server import json_server
from store.helpers import new_document

from haiku.rag.client import HaikuRAG
from haiku.rag.config import EmbeddingsConfig
from haiku.rag.errors import EmbeddingError, OperationCancelled
from haiku.rag.operations import CancelToken, Progress, Stage
from haiku.rag.store import schema as S

DIMS = {"old-model": 6, "new-model": 8}


def vector(text: str, dim: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [float(b) - 100.0 for b in digest[:dim]]


@dataclass
class EmbeddingServer:
    url: str = ""
    failing: set[str] = field(default_factory=set)  # models that answer HTTP 500
    requests: list[str] = field(default_factory=list)  # the model of each request
    # when set, a request for a model in ``gated`` waits for it (a rebuild held "running")
    gate: threading.Event | None = None
    gated: set[str] = field(default_factory=set)
    waiting: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    state = EmbeddingServer()

    def answer(path: str, body: Any, headers: Any) -> tuple[int, Any]:
        model = body["model"]
        state.requests.append(model)
        if state.gate is not None and model in state.gated:
            state.waiting.set()
            state.gate.wait(60)
        if model in state.failing:
            return 500, {"error": "model unloaded"}
        data = [{"index": i, "embedding": vector(t, DIMS[model])} for i, t in enumerate(body["input"])]
        return 200, {"data": data, "model": model}

    with json_server(answer) as state.url:
        try:
            yield state
        finally:
            if state.gate is not None:
                state.gate.set()  # a failed test must not leave a request waiting


def embedder(server: EmbeddingServer, model: str) -> EmbeddingsConfig:
    return EmbeddingsConfig(provider="openai-compatible", model=model, base_url=server.url, batch_size=2)


@pytest.fixture
def library(db_path, config, server) -> Iterator[HaikuRAG]:
    """Two documents embedded with the old model (6-d)."""
    from haiku.rag.store import documents as D

    config.embeddings = embedder(server, "old-model")
    client = HaikuRAG(db_path, config, create=True)
    D.write_document(client.store, new_document("file:///tmp/a.pdf", content_hash="a"))
    D.write_document(client.store, new_document("file:///tmp/b.pdf", content_hash="b", paragraphs=["Quillmoor ledger of the night convoys.", "Harbour dues."]))
    assert asyncio.run(client.embed_pending()) == 5
    yield client
    client.close()


def vectors_of(client: HaikuRAG) -> dict[str, list[float]]:
    rows = client.store.table(S.CHUNK_VECTORS).search().select(["chunk_id", "vector"]).limit(None).to_list()
    return {r["chunk_id"]: list(r["vector"]) for r in rows}


def test_rebuilding_with_another_embedder_replaces_every_vector_and_the_identity(library, server):
    seen: list[Progress] = []

    count = asyncio.run(library.rebuild(embeddings=embedder(server, "new-model"), progress=seen.append))

    assert count == 5
    assert library.store.embedder_identity == {"provider": "openai-compatible", "model": "new-model", "vector_dim": 8}
    stored = vectors_of(library)
    assert len(stored) == 5 and all(len(v) == 8 for v in stored.values())
    assert library.config.embeddings.model == "new-model"  # queries are embedded with it now
    assert {d.index_state for d in asyncio.run(library.list_documents())} == {"hybrid"}
    embedding = [p for p in seen if p.stage is Stage.EMBEDDING]
    assert embedding and embedding[-1].done == embedding[-1].total == 5
    server.requests.clear()
    assert library.search_sync("night convoys", 3, "vector")
    assert server.requests == ["new-model"]


def test_a_cancelled_rebuild_leaves_the_old_vectors_and_search_intact(library, server):
    before = vectors_of(library)
    identity = library.store.embedder_identity
    versions = {name: library.store.table(name).version for name in S.TABLES if library.store.has_table(name)}
    token = CancelToken()

    def cancel_at_first_batch(progress: Progress) -> None:
        if progress.stage is Stage.EMBEDDING:
            token.cancel()  # the user pressed Cancel while the new vectors were being computed

    with pytest.raises(OperationCancelled):
        asyncio.run(library.rebuild(embeddings=embedder(server, "new-model"), progress=cancel_at_first_batch, cancel=token))

    assert "new-model" in server.requests, "precondition: the rebuild had started embedding"
    assert library.store.embedder_identity == identity
    assert vectors_of(library) == before
    assert {name: library.store.table(name).version for name in versions} == versions, "nothing was written"
    assert library.config.embeddings.model == "old-model"
    assert library.search_sync("night convoys", 3, "hybrid")


def test_a_failing_embedding_server_leaves_the_old_vectors_intact(library, server):
    before = vectors_of(library)
    server.failing.add("new-model")

    with pytest.raises(EmbeddingError):
        asyncio.run(library.rebuild(embeddings=embedder(server, "new-model")))

    assert library.store.embedder_identity["model"] == "old-model"
    assert vectors_of(library) == before
    assert library.search_sync("night convoys", 3, "vector")
