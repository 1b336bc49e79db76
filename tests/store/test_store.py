import numpy as np
import pytest
from store.helpers import FailingAdd, new_document, table_counts

from haiku.rag.errors import (
    DocumentNotFoundError,
    EmbedderMismatchError,
    ReadOnlyError,
    SchemaVersionError,
    StoreDamagedError,
    StoreLockedError,
    StoreNotFoundError,
    StoreWriteError,
)
from haiku.rag.store import documents as D
from haiku.rag.store import schema
from haiku.rag.store.engine import Store


@pytest.fixture
def store(db_path):
    s = Store(str(db_path), create=True)
    yield s
    s.close()


def test_a_missing_store_is_not_created_unless_asked(db_path):
    with pytest.raises(StoreNotFoundError, match="no haiku.rag store"):
        Store(str(db_path))
    assert not db_path.exists()
    with pytest.raises(StoreNotFoundError):
        Store(str(db_path), create=True, read_only=True)


def test_create_get_list_and_delete(store):
    document, chunk_ids = D.write_document(store, new_document())
    assert len(chunk_ids) == 3
    assert D.get_document(store, document.id).title == "Report"
    assert [d.id for d in D.list_documents(store)] == [document.id]
    assert D.get_source_bytes(store, document) == b"%PDF-fake"
    assert [c.id for c in D.get_chunks(store, document)] == chunk_ids
    assert D.get_items(store, document)[0].label == "section_header"
    D.delete_document(store, document.id)
    assert all(n == 0 for name, n in table_counts(store).items() if name != schema.SETTINGS)
    with pytest.raises(DocumentNotFoundError):
        D.get_document(store, document.id)


def test_update_in_place_keeps_the_id_and_replaces_content(store):
    first, old_chunks = D.write_document(store, new_document())
    replaced, new_chunks = D.write_document(
        store,
        new_document(content_hash="hash-2", paragraphs=["Only one paragraph now."]),
        replaces=first,
    )
    assert replaced.id == first.id and replaced.created_at == first.created_at
    assert replaced.generation != first.generation
    assert [c.content for c in D.get_chunks(store, replaced)] == ["Only one paragraph now."]
    assert store.table(schema.CHUNKS).count_rows() == 1
    assert store.stale_generations() == {}


def test_failure_at_the_commit_point_restores_every_table(store, monkeypatch):
    D.write_document(store, new_document(uri="file:///a.pdf"))
    before = table_counts(store)
    versions = {n: store.table(n).version for n in schema.TABLES if store.has_table(n)}

    monkeypatch.setitem(store._tables, schema.DOCUMENTS, FailingAdd(store.table(schema.DOCUMENTS)))
    with pytest.raises(StoreWriteError, match="disk full. Nothing was changed"):
        D.write_document(store, new_document(uri="file:///b.pdf"))
    monkeypatch.undo()
    assert table_counts(store) == before
    for name, version in versions.items():
        assert store.table(name).to_arrow().num_rows == before[name]
        assert store.table(name).version >= version
    assert [d.uri for d in D.list_documents(store)] == ["file:///a.pdf"]


def test_leftovers_of_a_killed_write_are_invisible_and_recovered(db_path):
    store = Store(str(db_path), create=True)
    kept, _ = D.write_document(store, new_document(uri="file:///kept.pdf"))
    # Simulate a process killed after the content rows of a second document were written but
    # before its documents row (the commit point): write the content rows directly.
    ghost = new_document(uri="file:///ghost.pdf", paragraphs=["ghostly marmalade fragment"])
    store.table(schema.CHUNKS).add(D._chunks_table("ghost-id", "ghost-gen", ghost.chunks, ["ghost-chunk"]))
    store.table(schema.DOCUMENT_ITEMS).add(D._items_table("ghost-id", "ghost-gen", ghost.items))
    from haiku.rag.search.hybrid import search_chunks

    assert search_chunks(store, "ghostly", query_vector=None, search_type="fts") == []
    store.close()

    reader = Store(str(db_path), read_only=True)  # read-only never writes, still ignores them
    assert reader.stale_generations()
    reader.close()
    writer = Store(str(db_path))
    assert writer.stale_generations() == {}
    assert writer.table(schema.CHUNKS).count_rows() == kept.chunk_count
    writer.close()


def test_read_only_store_refuses_writes(db_path):
    Store(str(db_path), create=True).close()
    store = Store(str(db_path), read_only=True)
    with pytest.raises(ReadOnlyError, match="read-only"):
        D.write_document(store, new_document())


def test_embedder_identity_mismatch_fails_and_changes_nothing(store):
    document, ids = D.write_document(store, new_document())
    store.ensure_vector_table("local", "all-MiniLM-L6-v2", 4)
    D.add_vectors(store, [document] * len(ids), ids, np.eye(3, 4, dtype=np.float32))
    before = table_counts(store)
    with pytest.raises(EmbedderMismatchError, match=r"local:all-MiniLM-L6-v2 \(4-d\).*ollama:nomic"):
        store.check_embedder("ollama", "nomic", 768)
    with pytest.raises(EmbedderMismatchError):
        store.ensure_vector_table("local", "all-MiniLM-L6-v2", 8)
    assert table_counts(store) == before
    store.check_embedder("local", "all-MiniLM-L6-v2", None)  # size unknown yet: same model is fine


def test_a_store_from_a_newer_schema_is_refused_untouched(db_path):
    store = Store(str(db_path), create=True)
    store._put_setting("schema_version", schema.SCHEMA_VERSION + 1)
    store.close()
    files_before = sorted(p.relative_to(db_path) for p in db_path.rglob("*"))
    with pytest.raises(SchemaVersionError, match="newer haiku.rag"):
        Store(str(db_path))
    assert sorted(p.relative_to(db_path) for p in db_path.rglob("*")) == files_before


def test_a_folder_that_is_not_a_store(tmp_path):
    import lancedb
    import pyarrow as pa

    foreign = tmp_path / "foreign"
    lancedb.connect(str(foreign)).create_table("something", pa.table({"a": [1]}))
    with pytest.raises(StoreDamagedError, match="not a haiku.rag store"):
        Store(str(foreign))
    a_file = tmp_path / "file.lancedb"
    a_file.write_text("x")
    with pytest.raises(StoreDamagedError, match="is a file"):
        Store(str(a_file))


def test_a_store_missing_a_table_is_reported_as_damaged(db_path):
    import shutil

    Store(str(db_path), create=True).close()
    shutil.rmtree(db_path / f"{schema.CHUNKS}.lance")
    with pytest.raises(StoreDamagedError, match="missing table"):
        Store(str(db_path))


def test_second_writer_process_is_refused(db_path):
    import subprocess
    import sys
    import textwrap

    store = Store(str(db_path), create=True)
    D.write_document(store, new_document())  # takes the writer lock
    code = textwrap.dedent(
        f"""
        from haiku.rag.store.engine import Store
        from haiku.rag.store import documents as D
        s = Store({str(db_path)!r})
        D.delete_document(s, D.list_documents(s)[0].id)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert StoreLockedError.__name__ in result.stderr and "being written by pid" in result.stderr
    assert len(D.list_documents(store)) == 1
    store.close()


def test_invalid_filter_is_a_clear_error(store):
    from haiku.rag.errors import StoreError

    D.write_document(store, new_document())
    with pytest.raises(StoreError, match="invalid filter"):
        D.document_ids_matching(store, "titel = 'x'")
    assert len(D.document_ids_matching(store, "title = 'Report'")) == 1


def test_a_writer_holding_the_lock_and_a_reader_in_the_same_process_see_each_write(db_path):
    """The writer stops looking for versions written elsewhere once it holds the lock (no one
    else can write); a read-only handle keeps looking and sees every write at once."""
    from store.helpers import new_document

    from haiku.rag.store import documents as D

    writer = Store(str(db_path), create=True)
    D.write_document(writer, new_document("file:///tmp/a.pdf", content_hash="a"))
    reader = Store(str(db_path), read_only=True)
    assert [d.uri for d in D.list_documents(reader)] == ["file:///tmp/a.pdf"]
    for n in range(3):
        D.write_document(writer, new_document(f"file:///tmp/b{n}.pdf", content_hash=f"b{n}"))
        assert D.find_document_by_uri(reader, f"file:///tmp/b{n}.pdf") is not None
        assert D.find_document_by_uri(writer, f"file:///tmp/b{n}.pdf") is not None
    assert len(reader.current_generations()) == len(writer.current_generations()) == 4
    reader.close()
    writer.close()


def test_restoring_a_version_is_refused_while_a_writer_holds_the_store(db_path):
    from store.helpers import new_document

    from haiku.rag.errors import StoreLockedError
    from haiku.rag.store import documents as D
    from haiku.rag.store.versions import last_complete_cut, restore_cut

    writer = Store(str(db_path), create=True)
    D.write_document(writer, new_document("file:///tmp/a.pdf", content_hash="a"))
    cut = last_complete_cut(str(db_path))
    D.write_document(writer, new_document("file:///tmp/b.pdf", content_hash="b"))
    with pytest.raises(StoreLockedError, match="being written by pid"):
        restore_cut(str(db_path), cut)
    assert len(D.list_documents(writer)) == 2  # nothing moved under the writer
    writer.close()
    restore_cut(str(db_path), cut)
    reopened = Store(str(db_path))
    assert [d.uri for d in D.list_documents(reopened)] == ["file:///tmp/a.pdf"]
    reopened.close()
