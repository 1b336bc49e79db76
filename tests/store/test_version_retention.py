"""Version retention at upkeep: a store written one document at a time keeps a bounded number
of versions and fragments, while a read in this process or a reader in another process never
loses the version it reads."""

import subprocess
import sys
import textwrap
import threading

import numpy as np
from store.helpers import new_document

from haiku.rag.search.hybrid import search_chunks
from haiku.rag.store import documents as D
from haiku.rag.store import engine
from haiku.rag.store import schema as S
from haiku.rag.store.engine import Store

TRIGGER = 8  # small fragments that make upkeep due, lowered so a test loop reaches it often


def _write_one(store: Store, n: int, rng: np.random.Generator) -> None:
    """One document with its vectors in one transaction, then the upkeep check, as a
    ``create_document`` loop does."""
    store.ensure_vector_table("local", "test-model", 16)
    new = new_document(f"file:///tmp/doc-{n}.pdf", content_hash=f"h{n}", paragraphs=[f"alpha {n} quokka", f"beta {n}", f"gamma {n}"])
    D.write_document(store, new, vectors=rng.standard_normal((3, 16)).astype(np.float32))
    store.maintain_indexes()


def _tight(monkeypatch) -> None:
    monkeypatch.setattr(engine, "UNINDEXED_ROWS_BEFORE_MAINTENANCE", 10**9)  # only fragments count
    monkeypatch.setattr(engine, "SMALL_FRAGMENTS_BEFORE_MAINTENANCE", TRIGGER)
    # the margin for LanceDB's cleanup clock keeps versions by time; a fast test writes many
    # within it, so the count alone is checked here
    monkeypatch.setattr(engine, "VERSION_CLEANUP_MARGIN_SECONDS", 0.0)


def test_many_small_writes_leave_a_bounded_number_of_versions_and_fragments(db_path, monkeypatch):
    _tight(monkeypatch)
    store = Store(str(db_path), create=True)
    rng = np.random.default_rng(1)
    most: dict[str, int] = {}
    for n in range(60):
        _write_one(store, n, rng)
        for name, table in store._tables.items():
            most[name] = max(most.get(name, 0), len(table.list_versions()))
    # per table: the newest KEEP_RECENT_VERSIONS, the writes since the last upkeep (fewer than
    # the trigger) and the versions upkeep itself makes (compaction, index updates)
    bound = engine.KEEP_RECENT_VERSIONS + TRIGGER + 4
    assert max(most.values()) <= bound, most
    assert store.small_fragments() < TRIGGER
    # by time alone (a minute) all 60 writes' versions would still be there
    assert len(store.table(S.DOCUMENTS).list_versions()) < 60
    assert len(D.list_documents(store)) == 60
    assert D.find_document_by_uri(store, "file:///tmp/doc-7.pdf") is not None
    assert len(search_chunks(store, "quokka", query_vector=None, search_type="fts", limit=100)) == 60
    store.close()

    reopened = Store(str(db_path))  # recovery and the checks of an open read every table
    assert len(D.list_documents(reopened)) == 60
    reopened.close()


def test_a_read_running_in_this_process_keeps_the_version_it_reads(db_path, monkeypatch):
    import lancedb

    _tight(monkeypatch)
    store = Store(str(db_path), create=True)
    rng = np.random.default_rng(2)
    for n in range(5):
        _write_one(store, n, rng)
    started, written, done = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def read() -> None:  # a search in another thread, begun before the writes below
        with store.reading():
            version = seen["version"] = store.table(S.CHUNKS).version
            old = lancedb.connect(str(db_path)).open_table(S.CHUNKS)
            old.checkout(version)  # the version this read began on, as lance's query holds it
            seen["before"] = sorted(old.search().select(["id"]).limit(None).to_arrow()["id"].to_pylist())
            started.set()
            written.wait(60)
            try:
                seen["after"] = sorted(old.search().select(["id"]).limit(None).to_arrow()["id"].to_pylist())
            except Exception as exc:  # noqa: BLE001 - a lost version is what the test looks for
                seen["after"] = exc
        done.set()

    reader = threading.Thread(target=read)
    reader.start()
    assert started.wait(60)
    for n in range(5, 45):  # several upkeeps: compactions rewrite the fragments the read uses
        _write_one(store, n, rng)
    store.maintain_indexes(force=True)
    versions = {v["version"] for v in store.table(S.CHUNKS).list_versions()}
    assert seen["version"] in versions  # kept while the read runs
    written.set()
    assert done.wait(60)
    reader.join()
    assert seen["after"] == seen["before"] and len(seen["before"]) == 15

    store.maintain_indexes(force=True)  # the read is over: its version may go now
    assert seen["version"] not in {v["version"] for v in store.table(S.CHUNKS).list_versions()}
    assert len(store.table(S.CHUNKS).list_versions()) <= engine.KEEP_RECENT_VERSIONS + 4
    store.close()


def test_a_reader_in_another_process_keeps_its_version_through_many_writes_and_upkeeps(db_path, monkeypatch, tmp_path):
    _tight(monkeypatch)
    store = Store(str(db_path), create=True)
    rng = np.random.default_rng(3)
    for n in range(5):
        _write_one(store, n, rng)
    child = textwrap.dedent(
        f"""
        import sys
        import lancedb
        from haiku.rag.store.engine import Store
        reader = Store({str(db_path)!r}, read_only=True)  # holds the readers' lease
        table = lancedb.connect({str(db_path)!r}).open_table("chunks")
        table.checkout(table.version)
        print(table.version, table.count_rows(), flush=True)
        sys.stdin.readline()  # the writer writes meanwhile
        print(len(table.search().select(["id"]).limit(None).to_arrow()), flush=True)
        reader.close()
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        version, rows = (int(x) for x in proc.stdout.readline().split())
        assert rows == 15 and store.readers_present()
        for n in range(5, 45):
            _write_one(store, n, rng)
        store.maintain_indexes(force=True)
        assert version in {v["version"] for v in store.table(S.CHUNKS).list_versions()}
        out, _ = proc.communicate("\n", timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and int(out.strip()) == 15
    assert not store.readers_present()
    store.maintain_indexes(force=True)
    assert version not in {v["version"] for v in store.table(S.CHUNKS).list_versions()}
    store.close()
