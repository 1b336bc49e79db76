"""Copies and backups (issue 19, item 7): a file-by-file copy taken mid-write is not a dead
end (``doctor`` names the last complete version, ``restore-version`` rolls back to it), and
``haiku-rag backup`` copies a store consistently while another writer is in the middle of a
write."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from store.helpers import new_document

from haiku.rag.cli import main
from haiku.rag.doctor import run_doctor
from haiku.rag.store import documents as D
from haiku.rag.store.engine import Store

WAIT = 60.0


def _data_files(db: Path) -> set[Path]:
    return {p for p in db.rglob("*") if p.is_file() and "data" in p.relative_to(db).parts}


def test_a_copy_taken_mid_write_is_rolled_back_to_its_last_complete_version(tmp_path, db_path, capsys):
    store = Store(str(db_path), create=True)
    D.write_documents(store, [new_document("file:///a/first.pdf")])
    before = _data_files(db_path)
    D.write_documents(store, [new_document("file:///a/second.pdf")])
    store.close()
    # A copier that listed the data files before the second write landed, and copied the
    # table manifests after: the newest versions name data files the copy does not have.
    copy = tmp_path / "copy.lancedb"
    shutil.copytree(db_path, copy)
    for path in _data_files(db_path) - before:
        (copy / path.relative_to(db_path)).unlink()

    assert main(["--db", str(copy), "list"]) == 1
    err = capsys.readouterr().err
    assert "damaged" in err and "restore-version" in err

    assert main(["--db", str(copy), "doctor"]) == 1
    out = capsys.readouterr().out
    assert "last complete version:" in out and "(1 documents;" in out and "restore-version" in out

    assert main(["--db", str(copy), "restore-version"]) == 0
    assert "restored the version of" in capsys.readouterr().out
    assert main(["--db", str(copy), "doctor"]) == 0
    restored = Store(str(copy), read_only=True)
    assert [d.uri for d in D.list_documents(restored)] == ["file:///a/first.pdf"]
    restored.close()


def test_backup_while_another_writer_is_mid_write_is_consistent(tmp_path, db_path, monkeypatch, capsys):
    store = Store(str(db_path), create=True)
    D.write_documents(store, [new_document("file:///a/first.pdf")])
    appended, go = threading.Event(), threading.Event()
    real_add_content = D._add_content

    def add_content_then_pause(store, *tables):
        real_add_content(store, *tables)
        if threading.current_thread().name == "writer":
            appended.set()
            assert go.wait(WAIT)

    monkeypatch.setattr(D, "_add_content", add_content_then_pause)
    writer = threading.Thread(target=lambda: D.write_documents(store, [new_document("file:///a/second.pdf")]), name="writer")
    writer.start()
    assert appended.wait(WAIT)  # its content rows are in, its documents row is not
    backup = tmp_path / "backup.lancedb"
    try:
        assert main(["--db", str(db_path), "backup", str(backup)]) == 0
    finally:
        go.set()
        writer.join(WAIT)
    assert "backed up the store as of" in capsys.readouterr().out
    store.close()

    copy = Store(str(backup), read_only=True)
    assert run_doctor(copy).ok
    assert [d.uri for d in D.list_documents(copy)] == ["file:///a/first.pdf"]
    (document,) = D.list_documents(copy)
    assert len(D.get_chunks(copy, document)) == 3
    for table in ("documents", "chunks", "document_blobs"):  # the history before the cut is not copied
        assert len(copy.table(table).list_versions()) <= 4, copy.table(table).list_versions()
    copy.close()
    assert main(["--db", str(db_path), "backup", str(backup)]) == 1  # never over an existing folder
