"""A second writer's recovery never deletes another writer's fresh commit (issue 19, item 1).

Two writers share one store folder (two ``Store`` handles: the writer lock is a file lock per
open file, so they exclude each other as two processes would). The interleaving is forced
with events, not sleeps: writer A pauses after appending its content rows; writer B opens the
store and pauses right after it has worked out which generations look stale (A's uncommitted
one does); A commits and closes; B resumes.
"""

from __future__ import annotations

import threading

from store.helpers import new_document

from haiku.rag.doctor import run_doctor
from haiku.rag.store import documents as D
from haiku.rag.store.engine import Store

WAIT = 60.0  # only a hang waits this long: every step is released by an event


def test_recovery_by_a_second_writer_keeps_a_commit_made_meanwhile(db_path, monkeypatch):
    Store(str(db_path), create=True).close()
    a_appended, a_go = threading.Event(), threading.Event()
    b_computed, b_go = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    real_add_content = D._add_content

    def add_content_then_pause(store, *tables):
        real_add_content(store, *tables)
        if threading.current_thread().name == "writer-a":
            a_appended.set()
            assert a_go.wait(WAIT)

    real_stale = Store.stale_generations

    def stale_then_pause(self, *args, **kwargs):
        found = real_stale(self, *args, **kwargs)
        if threading.current_thread().name == "writer-b" and not b_computed.is_set():
            b_computed.set()
            assert b_go.wait(WAIT)
        return found

    monkeypatch.setattr(D, "_add_content", add_content_then_pause)
    monkeypatch.setattr(Store, "stale_generations", stale_then_pause)

    def writer_a() -> None:
        try:
            store = Store(str(db_path))
            D.write_documents(store, [new_document("file:///a/report.pdf")])
            store.close()  # A exits: its writer lock goes with it
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
            a_appended.set()

    def writer_b() -> None:
        try:
            Store(str(db_path)).close()  # opening for writing runs recovery
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            b_computed.set()

    a = threading.Thread(target=writer_a, name="writer-a")
    a.start()
    assert a_appended.wait(WAIT)
    b = threading.Thread(target=writer_b, name="writer-b")
    b.start()
    assert b_computed.wait(WAIT)  # B has seen A's rows as leftovers
    a_go.set()
    a.join(WAIT)
    b_go.set()
    b.join(WAIT)
    assert not a.is_alive() and not b.is_alive()
    assert not errors, errors
    monkeypatch.undo()

    store = Store(str(db_path), read_only=True)
    report = run_doctor(store)
    assert report.ok, [(c.name, c.detail) for c in report.checks if not c.ok]
    (document,) = D.list_documents(store)
    assert document.uri == "file:///a/report.pdf"
    assert len(D.get_chunks(store, document)) == 3
    assert D.get_source_bytes(store, document) == b"%PDF-fake"
    store.close()


def test_recovery_never_deletes_a_generation_a_document_row_names(db_path, monkeypatch):
    """Even handed a stale set that names a committed generation, recovery keeps it."""
    store = Store(str(db_path), create=True)
    ((document, _),) = D.write_documents(store, [new_document("file:///a/report.pdf")])
    monkeypatch.setattr(
        Store, "stale_generations", lambda self, *a, **k: {name: {document.generation} for name in ("chunks", "document_blobs", "document_items")}
    )
    store.recover()
    monkeypatch.undo()
    assert len(D.get_chunks(store, document)) == 3
    assert run_doctor(store).ok
    store.close()
