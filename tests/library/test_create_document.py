"""``HaikuRAG.create_document`` in a loop, as a script writes it (issue 16): each call embeds
first and writes the document with its vectors in one transaction, so a call adds one version
to each table it writes and reads nothing back; a failed embedding stores nothing."""

from __future__ import annotations

import asyncio
import socket

import pytest

from haiku.rag.client import HaikuRAG
from haiku.rag.errors import EmbeddingError
from haiku.rag.store import schema

TEXTS = [
    "Quokkas are small marsupials living on Rottnest Island near Perth.",
    "The Svalbard seed vault stores duplicates of crop seeds in permafrost.",
    "Tardigrades survive desiccation by forming a glassy tun state.",
]


def _versions(client: HaikuRAG) -> dict[str, int]:
    return {name: client.store.table(name).version for name in schema.TABLES if client.store.has_table(name)}


def test_each_create_document_is_one_version_per_table_and_searchable_by_meaning(tmp_path, config):
    async def scenario() -> None:
        async with HaikuRAG(tmp_path / "lib.lancedb", config, create=True) as client:
            first = await client.create_document(TEXTS[0], uri="note://0")
            assert first.index_state == "hybrid"
            for n, text in enumerate(TEXTS[1:], start=1):
                before = _versions(client)
                document = await client.create_document(text, uri=f"note://{n}")
                after = _versions(client)
                assert document.index_state == "hybrid"
                assert document == await client.get_document(document.id)
                moved = {name: after[name] - before[name] for name in after if after[name] != before[name]}
                # content, vectors and the documents row (the commit point): one append each
                assert moved == {
                    schema.DOCUMENT_BLOBS: 1,
                    schema.DOCUMENT_ITEMS: 1,
                    schema.CHUNKS: 1,
                    schema.CHUNK_VECTORS: 1,
                    schema.DOCUMENTS: 1,
                }
            hits = await client.search("seeds kept frozen in the Arctic", search_type="vector", limit=1)
            assert hits[0].document_uri == "note://1"

    asyncio.run(scenario())


def test_create_document_at_a_known_uri_replaces_it_with_new_vectors(tmp_path, config):
    async def scenario() -> None:
        async with HaikuRAG(tmp_path / "lib.lancedb", config, create=True) as client:
            first = await client.create_document(TEXTS[0], uri="note://x")
            again = await client.create_document(TEXTS[0], uri="note://x")
            assert again.generation == first.generation  # unchanged: nothing written
            replaced = await client.create_document(TEXTS[2], uri="note://x")
            assert replaced.id == first.id and replaced.generation != first.generation
            assert replaced.index_state == "hybrid"
            assert client.store.stale_generations() == {}
            vectors = client.store.table(schema.CHUNK_VECTORS).to_arrow()
            assert set(vectors["generation"].to_pylist()) == {replaced.generation}
            hits = await client.search("animals that survive drying out", search_type="vector", limit=1)
            assert hits[0].document_id == first.id

    asyncio.run(scenario())


def test_an_unchanged_text_only_document_gets_its_vectors(tmp_path, config):
    async def scenario() -> None:
        async with HaikuRAG(tmp_path / "lib.lancedb", config, create=True) as client:
            text_only = await client.create_document(TEXTS[1], uri="note://s", embed=False)
            assert text_only.index_state == "text"
            completed = await client.create_document(TEXTS[1], uri="note://s")
            assert completed.id == text_only.id and completed.index_state == "hybrid"
            assert client.store.table(schema.CHUNK_VECTORS).count_rows() == completed.chunk_count

    asyncio.run(scenario())


def test_a_failed_embedding_stores_nothing(tmp_path, config):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config.embeddings.provider = "ollama"
    config.embeddings.model = "nomic-embed-text"
    config.embeddings.vector_dim = 8
    config.embeddings.base_url = f"http://127.0.0.1:{port}"

    async def scenario() -> None:
        async with HaikuRAG(tmp_path / "lib.lancedb", config, create=True) as client:
            with pytest.raises(EmbeddingError):
                await client.create_document(TEXTS[0], uri="note://0")
            assert await client.list_documents() == []
            assert all(
                client.store.table(name).count_rows() == 0
                for name in (*schema.CONTENT_TABLES, schema.DOCUMENTS)
                if client.store.has_table(name)
            )

    asyncio.run(scenario())
