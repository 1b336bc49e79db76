"""Keeping the library whole: the vectors a document still lacks, index upkeep, re-embedding
every chunk with another model (``rebuild``), and what the store holds (``info``)."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from haiku.rag.client.base import ClientBase, run_cancellable
from haiku.rag.config import EmbeddingsConfig
from haiku.rag.operations import (
    CancelToken,
    Progress,
    ProgressCallback,
    Stage,
    check_cancelled,
    report,
)
from haiku.rag.store import documents as docs
from haiku.rag.store.models import Document

VECTOR_WRITE_BATCH = 256  # vectors per store append: fewer table versions than per-batch writes


async def embed_pending(
    client: ClientBase,
    documents: Sequence[Document] | None = None,
    *,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> int:
    """Compute the vectors that are missing (all documents when none are named).

    Returns how many chunks were embedded. Cancellation keeps the vectors already written;
    the document stays full-text searchable and a later call completes it.
    """
    cancel = cancel or CancelToken()
    work = client._reading(functools.partial(embed_pending_sync, client))
    return await run_cancellable(cancel, work, documents, progress, cancel)


def embed_pending_sync(
    client: ClientBase,
    documents: Sequence[Document] | None,
    progress: ProgressCallback | None,
    cancel: CancelToken | None,
) -> int:
    store = client.store
    if documents is None:
        documents = [d for d in docs.list_documents(store) if d.index_state == "text"]
    current = docs.get_documents(store, [d.id for d in documents])
    pending = docs.chunks_missing_vectors(store, current)  # (owner, chunk id, text)
    with_pending = {owner.generation for owner, _, _ in pending}
    # Text-only documents with nothing pending got their vectors before an interruption.
    docs.mark_hybrid(store, [d for d in current if d.index_state == "text" and d.generation not in with_pending])
    if not pending:
        return 0
    embedder = client.embedder
    identity = embedder.identity
    store.ensure_vector_table(identity.provider, identity.model, identity.vector_dim)
    remaining = Counter(owner.generation for owner, _, _ in pending)
    total = len(pending)
    # Batches span documents: many small documents embed as efficiently as one big one,
    # and each batch is one store write.
    for start in range(0, total, VECTOR_WRITE_BATCH):
        batch = pending[start : start + VECTOR_WRITE_BATCH]

        def forward(p: Progress, offset: int = start, source: str = batch[0][0].uri) -> None:
            report(progress, Progress(Stage.EMBEDDING, source, offset + p.done, total))

        vectors = embedder.embed_documents([text for _, _, text in batch], progress=forward, cancel=cancel)
        check_cancelled(cancel)
        docs.add_vectors(store, [owner for owner, _, _ in batch], [cid for _, cid, _ in batch], vectors)
        finished: dict[str, Document] = {}
        for owner, _, _ in batch:
            remaining[owner.generation] -= 1
            if remaining[owner.generation] == 0:
                finished[owner.generation] = owner
        docs.mark_hybrid(store, list(finished.values()))
        for owner in finished.values():
            report(progress, Progress(Stage.DONE, owner.uri, message="searchable (hybrid)"))
    store.maintain_indexes()
    return total


async def maintain_indexes(client: ClientBase, *, force: bool = False) -> bool:
    """Fold newly written rows into the indexes once enough have piled up (see
    ``Store.maintain_indexes``); ingest and embedding passes call it themselves."""
    if client.is_read_only:
        return False
    return await client._store_thread(client.store.maintain_indexes, force=force)


async def rebuild(
    client: ClientBase,
    *,
    embeddings: EmbeddingsConfig | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> int:
    """Re-embed every chunk with ``embeddings`` (default: the configured embedder).

    The new vectors are computed first with the store untouched: searches keep using the
    old vectors meanwhile, and a cancel or a failure (an embedding server gone) leaves the
    old vectors and the recorded embedder exactly as they were, never a half-rebuilt store.
    Only when every chunk has its new vector are the vectors replaced (one short write
    pass), and from then on this client embeds queries with the new embedder
    (``config.embeddings`` is updated). Returns how many chunks were embedded.
    """
    cancel = cancel or CancelToken()
    work = client._reading(functools.partial(_rebuild_sync, client))
    return await run_cancellable(cancel, work, embeddings, progress, cancel)


def _rebuild_sync(
    client: ClientBase, embeddings: EmbeddingsConfig | None, progress: ProgressCallback | None, cancel: CancelToken
) -> int:
    import numpy as np

    store = client.store
    cfg = embeddings or client.config.embeddings
    embedder = client.embedder if embeddings is None else client._create_embedder(cfg)
    snapshot = docs.list_documents(store)
    chunks = docs.chunks_missing_vectors(store, snapshot, include_embedded=True)
    total = len(chunks)
    computed: list[Any] = []
    for start in range(0, total, VECTOR_WRITE_BATCH):
        batch = chunks[start : start + VECTOR_WRITE_BATCH]

        def forward(p: Progress, offset: int = start, source: str = batch[0][0].uri) -> None:
            report(progress, Progress(Stage.EMBEDDING, source, offset + p.done, total))

        computed.append(embedder.embed_documents([text for _, _, text in batch], progress=forward, cancel=cancel))
        check_cancelled(cancel)
    check_cancelled(cancel)
    identity = embedder.identity
    # The swap: from here on nothing checks cancellation (a few appends; seconds). The
    # store's writer lock is held throughout, so an embedding pass on another thread (the
    # app's queue) cannot write old-model vectors between the drop and the new table.
    with store._write_lock:
        store.drop_vectors()
        store.ensure_vector_table(identity.provider, identity.model, identity.vector_dim)
        for start, vectors in zip(range(0, total, VECTOR_WRITE_BATCH), computed, strict=True):
            batch = chunks[start : start + VECTOR_WRITE_BATCH]
            docs.add_vectors(store, [o for o, _, _ in batch], [cid for _, cid, _ in batch], np.asarray(vectors))
        docs.mark_hybrid(store, snapshot)
        if embeddings is not None and embedder is not client._embedder:
            # the old embedder is not closed: a search on another thread may still hold it
            client._embedder = embedder
            client.config.embeddings = cfg
        # documents written while the vectors were computed: embedded with the new model
        added = embed_pending_sync(client, None, progress, None)
    store.maintain_indexes()
    return total + added


async def info(client: ClientBase) -> dict[str, Any]:
    def collect() -> dict[str, Any]:
        from haiku.rag.store import schema

        store = client.store
        documents = docs.list_documents(store)
        chunks = store.table(schema.CHUNKS).count_rows()
        vectors = store.table(schema.CHUNK_VECTORS).count_rows() if client._has_vectors() else 0
        return {
            "location": client.location,
            "read_only": client.is_read_only,
            "schema_version": store.get_setting("schema_version"),
            "embedder": store.embedder_identity,
            "documents": len(documents),
            "documents_text_only": sum(1 for d in documents if d.index_state == "text"),
            "chunks": chunks,
            "vectors": vectors,
            "pages": sum(d.page_count for d in documents),
        }

    return await client._store_thread(collect)
