"""What ingestion and search hold between uses is given back when the library is idle, and
comes back on next use (issue 16, memory): checked on the objects themselves, never on RSS."""

from __future__ import annotations

import asyncio
import weakref

import numpy as np

from haiku.rag.client import HaikuRAG
from haiku.rag.embeddings.local import LocalEmbedder
from haiku.rag.memory import return_freed_memory


def test_a_released_local_embedder_drops_its_session_and_loads_it_again_on_next_use():
    embedder = LocalEmbedder(threads=1)
    first = embedder.embed_documents(["Glaciers retreat when summer melting exceeds snowfall."])
    session = weakref.ref(embedder._session)
    embedder.release()
    assert embedder._session is None and embedder._tokenizer is None
    assert session() is None  # nothing else kept the session (and its arena) alive
    again = embedder.embed_documents(["Glaciers retreat when summer melting exceeds snowfall."])
    assert embedder._session is not None
    assert np.allclose(first, again, atol=1e-6)
    embedder.close()


def test_release_memory_after_ingesting_gives_back_the_session_and_the_search_caches(tmp_path, config):
    async def scenario() -> None:
        async with HaikuRAG(tmp_path / "lib.lancedb", config, create=True) as client:
            for n in range(3):
                await client.create_document(f"Quokkas number {n} live on Rottnest Island near Perth.")
            hits = await client.search("where do quokkas live", search_type="vector")
            assert hits
            embedder = client._embedder
            assert embedder is not None and embedder._session is not None
            matrix = weakref.ref(client.store.vector_matrix())
            assert matrix() is not None

            client.release_memory()

            assert client._embedder is embedder and embedder._session is None
            assert matrix() is None  # the exact-search matrix is gone, not just unreferenced here
            assert client.store._generations is None
            again = await client.search("where do quokkas live", search_type="vector")
            assert [h.chunk_id for h in again] == [h.chunk_id for h in hits]  # matrix reloaded
            assert await client.search("which island has quokkas", search_type="vector")
            assert embedder._session is not None  # re-created by a new query's embedding

    asyncio.run(scenario())


def test_returning_freed_memory_is_harmless_when_nothing_was_freed():
    return_freed_memory()
    return_freed_memory()
