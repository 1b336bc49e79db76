"""`haiku-rag doctor` finds each kind of damage it claims to check (and passes a healthy store)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from store.helpers import new_document

from haiku.rag.cli import main
from haiku.rag.doctor import run_doctor
from haiku.rag.store import documents as D
from haiku.rag.store import schema as S
from haiku.rag.store.engine import Store


@pytest.fixture
def store(db_path):
    s = Store(str(db_path), create=True)
    first, ids = D.write_document(s, new_document(uri="file:///a.pdf"))
    D.write_document(s, new_document(uri="file:///b.pdf", content_hash="hash-2"))
    s.ensure_vector_table("local", "all-MiniLM-L6-v2", 4)
    D.add_vectors(s, [first] * len(ids), ids, np.ones((len(ids), 4), dtype=np.float32))
    D.mark_hybrid(s, [first])
    yield s
    s.close()


def _failed(store: Store, **kwargs) -> set[str]:
    return {c.name for c in run_doctor(store, **kwargs).checks if not c.ok}


def test_a_healthy_store_passes_every_check(store):
    report = run_doctor(store, expected_vector_dim=4)
    assert report.ok, [c for c in report.checks if not c.ok]
    names = {c.name for c in report.checks}
    for expected in (
        "every chunk has its document",
        "every document has all its chunks",
        "every document has its items",
        "vectors have the recorded size",
        "full-text index present",
        "lookup indexes present",
    ):
        assert expected in names


def test_a_document_without_its_chunks(store):
    document = D.list_documents(store)[0]
    store.table(S.CHUNKS).delete(f"generation = '{document.generation}'")
    assert "every document has all its chunks" in _failed(store)


def test_a_document_without_its_items_or_file(store):
    document = D.list_documents(store)[0]
    store.table(S.DOCUMENT_ITEMS).delete(f"generation = '{document.generation}'")
    store.table(S.DOCUMENT_BLOBS).delete(f"generation = '{document.generation}'")
    failed = _failed(store)
    assert {"every document has its items", "every document has its stored file"} <= failed


def test_chunks_whose_document_is_gone(store):
    document = D.list_documents(store)[0]
    store.table(S.DOCUMENTS).delete(f"id = '{document.id}'")
    failed = _failed(store)
    assert {"every chunk has its document", "no leftovers of interrupted writes"} <= failed


def test_two_rows_for_one_uri(store):
    row = store.table(S.DOCUMENTS).search().limit(1).to_arrow()
    store.table(S.DOCUMENTS).add(row.set_column(0, "id", pa.array(["another-id"])))
    assert "one document per URI" in _failed(store)


def test_vectors_of_another_size_than_configured(store):
    assert "vectors have the configured embedder's size" in _failed(store, expected_vector_dim=384)


def test_a_hybrid_document_missing_vectors(store):
    store.table(S.CHUNK_VECTORS).delete("true")
    assert "hybrid documents have every vector" in _failed(store)


def test_missing_indexes(store):
    store.table(S.CHUNKS).drop_index("content_fts_idx")
    store.table(S.DOCUMENTS).drop_index("uri_idx")
    failed = _failed(store)
    assert {"full-text index present", "lookup indexes present"} <= failed


def test_the_cli_exits_non_zero_and_names_the_failed_check(store, db_path, capsys):
    store.table(S.DOCUMENT_ITEMS).delete("true")
    store.close()
    assert main(["--db", str(db_path), "doctor"]) == 1
    assert "FAIL every document has its items" in capsys.readouterr().out
