"""A document written with its vectors (``write_document(..., vectors=...)``, what a
``create_document`` loop uses): one transaction, one version per table, searchable by meaning
from its commit, and all-or-nothing like any other write."""

from __future__ import annotations

import numpy as np
import pytest
from store.helpers import FailingAdd, new_document, table_counts

from haiku.rag.errors import StoreWriteError
from haiku.rag.store import documents as D
from haiku.rag.store import schema
from haiku.rag.store.engine import Store

DIM = 4


@pytest.fixture
def store(db_path):
    s = Store(str(db_path), create=True)
    s.ensure_vector_table("test", "unit-vectors", DIM)
    yield s
    s.close()


def _vectors(count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((count, DIM), dtype=np.float32)


def _versions(store: Store) -> dict[str, int]:
    return {name: store.table(name).version for name in schema.TABLES}


def _stored_vectors(store: Store) -> dict[str, tuple[str, list[float]]]:
    rows = store.table(schema.CHUNK_VECTORS).to_arrow().to_pylist()
    return {r["chunk_id"]: (r["generation"], r["vector"]) for r in rows}


def test_a_document_written_with_its_vectors_is_hybrid_in_one_version_per_table(store):
    before = _versions(store)
    vectors = _vectors(3, seed=1)
    document, chunk_ids = D.write_document(store, new_document(), vectors=vectors)
    after = _versions(store)

    assert document.index_state == "hybrid"
    assert D.get_document(store, document.id).index_state == "hybrid"
    changed = {name for name in schema.TABLES if after[name] != before[name]}
    assert changed == {schema.DOCUMENTS, schema.DOCUMENT_BLOBS, schema.DOCUMENT_ITEMS, schema.CHUNKS, schema.CHUNK_VECTORS}
    assert all(after[name] == before[name] + 1 for name in changed)
    stored = _stored_vectors(store)
    assert set(stored) == set(chunk_ids)
    for chunk_id, vector in zip(chunk_ids, vectors, strict=True):
        generation, values = stored[chunk_id]
        assert generation == document.generation
        assert np.allclose(values, vector)
    assert D.chunks_missing_vectors(store, [document]) == []


def test_a_replacement_with_vectors_drops_the_old_generations_vectors(store):
    first, first_chunks = D.write_document(store, new_document(), vectors=_vectors(3, seed=1))
    replaced, new_chunks = D.write_document(
        store,
        new_document(content_hash="hash-2", paragraphs=["Only one paragraph now."]),
        replaces=first,
        vectors=_vectors(1, seed=2),
    )
    assert replaced.id == first.id and replaced.index_state == "hybrid"
    assert set(_stored_vectors(store)) == set(new_chunks)
    assert store.stale_generations() == {}


def test_a_document_without_chunks_is_hybrid_with_no_vectors(store):
    document, chunk_ids = D.write_document(store, new_document(paragraphs=[]), vectors=np.empty((0, DIM), np.float32))
    assert chunk_ids == [] and document.index_state == "hybrid"
    assert store.table(schema.CHUNK_VECTORS).count_rows() == 0


def test_vectors_that_do_not_match_the_chunks_are_refused_and_nothing_is_written(store):
    before = table_counts(store)
    with pytest.raises(ValueError, match="3 chunks need 3 vectors of 4 values"):
        D.write_document(store, new_document(), vectors=_vectors(2, seed=1))
    with pytest.raises(ValueError, match="3 chunks need 3 vectors of 4 values"):
        D.write_document(store, new_document(), vectors=np.ones((3, DIM + 1), np.float32))
    assert table_counts(store) == before
    assert D.list_documents(store) == []


def test_a_failure_at_the_commit_point_takes_the_vectors_back_too(store, monkeypatch):
    D.write_document(store, new_document(uri="file:///a.pdf"), vectors=_vectors(3, seed=1))
    before = table_counts(store)

    monkeypatch.setitem(store._tables, schema.DOCUMENTS, FailingAdd(store.table(schema.DOCUMENTS)))
    with pytest.raises(StoreWriteError, match="disk full. Nothing was changed"):
        D.write_document(store, new_document(uri="file:///b.pdf"), vectors=_vectors(3, seed=2))
    monkeypatch.undo()
    assert table_counts(store) == before
    assert store.table(schema.CHUNK_VECTORS).to_arrow().num_rows == before[schema.CHUNK_VECTORS]
    assert [d.uri for d in D.list_documents(store)] == ["file:///a.pdf"]


def test_lancedb_caches_stay_within_their_bounds_while_documents_are_written_one_at_a_time(db_path, monkeypatch):
    # Each write makes new table versions, each with its own cached metadata; lance's default
    # bound (1 GiB) let a create_document loop grow by ~0.7 MB a document. Small bounds here,
    # so that a few dozen writes would overflow them were they not applied.
    from haiku.rag.store import engine

    monkeypatch.setattr(engine, "METADATA_CACHE_BYTES", 2 * 1024 * 1024)
    monkeypatch.setattr(engine, "INDEX_CACHE_BYTES", 2 * 1024 * 1024)
    store = Store(str(db_path), create=True)
    store.ensure_vector_table("test", "unit-vectors", DIM)
    for n in range(60):
        D.write_document(store, new_document(f"file:///doc-{n}.pdf", content_hash=f"h{n}"), vectors=_vectors(3, n))
        assert D.find_document_by_uri(store, f"file:///doc-{n}.pdf") is not None
    assert store._session.size_bytes <= 4 * 1024 * 1024
    assert len(D.list_documents(store)) == 60
    store.close()
