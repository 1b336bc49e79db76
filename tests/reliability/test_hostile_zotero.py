"""A hostile ``zotero.sqlite`` (issue 32): it cannot reach files outside the Zotero data
directory, cannot hang the import (deadline, Ctrl-C), cannot store giant fields whole, and an
unusable collection name is reported instead of aborting the import half-way."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pdf_factory
import pytest
import zotero_factory as zf

from haiku.rag.client import HaikuRAG
from haiku.rag.zotero import (
    MAX_CREATORS,
    MAX_TITLE_CHARS,
    ZoteroError,
    import_zotero,
    locate,
    read_library,
)

SECRET = "diary entry: the walrus keeps my secrets"


@pytest.fixture
async def client(db_path, config):
    async with HaikuRAG(db_path, config, create=True) as c:
        yield c


@pytest.fixture
def zotero(tmp_path):
    return zf.build_library(tmp_path)


@pytest.fixture
def diary(tmp_path) -> Path:
    """A private PDF outside the Zotero data directory."""
    path = tmp_path / "private" / "diary.pdf"
    path.parent.mkdir()
    pdf_factory.make_paper_pdf(path, title="Private diary", authors=["Me"], paragraphs=[SECRET], pages=1)
    return path


def _add_attachment(db: sqlite3.Connection, key: str, path: str, link_mode: int = 0) -> None:
    parent = db.execute("SELECT itemID FROM items WHERE key = 'AAAA1111'").fetchone()[0]
    type_id = db.execute("SELECT itemTypeID FROM itemTypes WHERE typeName = 'attachment'").fetchone()[0]
    item_id = db.execute("SELECT max(itemID) + 1 FROM items").fetchone()[0]
    db.execute("INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES (?, ?, 1, ?)", (item_id, type_id, key))
    db.execute(
        "INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) VALUES (?, ?, ?, 'application/pdf', ?)",
        (item_id, parent, link_mode, path),
    )


async def test_attachments_cannot_reach_outside_the_data_directory(client, zotero, diary, tmp_path):
    storage = zotero.data_dir / "storage"
    # a symlink under storage/ pointing at the diary
    (storage / "LINK0001").mkdir()
    (storage / "LINK0001" / "paper.pdf").symlink_to(diary)
    (storage / "DOTS0001").mkdir()
    # a key that climbs out of storage/
    climb = os.path.relpath(diary.parent, storage)  # e.g. ../../private
    db = zotero.connect()
    _add_attachment(db, "DOTS0001", f"storage:../../../private/{diary.name}")
    _add_attachment(db, "LINK0001", "storage:paper.pdf")
    _add_attachment(db, climb, f"storage:{diary.name}")
    _add_attachment(db, "BASE0001", f"attachments:../private/{diary.name}", link_mode=2)
    _add_attachment(db, "ABSO0001", str(diary), link_mode=0)  # absolute path on a stored file
    db.commit()
    db.close()

    result = await import_zotero(client, zotero.data_dir, base_dir=zotero.linked_dir, embed=False)
    outcomes = {o.key: o for o in result.outcomes}
    for key in ("DOTS0001", "LINK0001", climb, "BASE0001", "ABSO0001"):
        assert outcomes[key].status == "missing", (key, outcomes[key])
        assert "refused" in outcomes[key].reason, outcomes[key].reason
        assert outcomes[key].document_id is None
    assert "outside" in outcomes["LINK0001"].reason and "outside" in outcomes["DOTS0001"].reason
    assert "not a Zotero key" in outcomes[climb].reason
    # the honest attachments still came in; the diary did not
    assert outcomes[zotero.keys["a_main"]].status == "ingested"
    assert outcomes[zotero.keys["b_linked"]].status == "ingested"
    assert await client.search("walrus keeps my secrets diary", search_type="fts") == [] or all(
        "secrets" not in h.content for h in await client.search("walrus keeps my secrets diary", search_type="fts")
    )
    titles = {d.title for d in await client.list_documents()}
    assert "Private diary" not in titles


async def test_a_file_that_is_not_a_pdf_is_refused(client, zotero, tmp_path):
    folder = zotero.data_dir / "storage" / "TEXT0001"
    folder.mkdir()
    (folder / "notes.txt").write_text(SECRET)  # labelled application/pdf in the database
    db = zotero.connect()
    _add_attachment(db, "TEXT0001", "storage:notes.txt")
    db.commit()
    db.close()
    result = await import_zotero(client, zotero.data_dir, embed=False)
    outcome = next(o for o in result.outcomes if o.key == "TEXT0001")
    assert outcome.status == "failed" and "not a PDF" in outcome.reason


def _endless(zotero: zf.ZoteroFixture) -> None:
    """tags becomes a view over an endless recursive query."""
    db = zotero.connect()
    db.executescript(
        "DROP TABLE tags; CREATE VIEW tags AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
        "SELECT x AS tagID, 'endless' AS name FROM c;"
    )
    db.commit()
    db.close()


def test_an_endless_query_stops_at_the_deadline(zotero):
    _endless(zotero)
    with pytest.raises(ZoteroError, match=r"did not finish within 1 s"):
        read_library(locate(zotero.data_dir), deadline=1.0)


def test_ctrl_c_stops_a_hanging_add_zotero(zotero, tmp_path):
    _endless(zotero)
    data_dir = tmp_path / "data"
    env = {**os.environ, "HAIKU_RAG_STORAGE__DATA_DIR": str(data_dir), "PYTHONPATH": os.pathsep.join(sys.path)}
    env["PYTHONFAULTHANDLER"] = "1"  # a child that hangs is made to print every thread's stack
    # Started as a terminal starts a command in the foreground: Ctrl-C at its default. A test run
    # started in the background of a script (`cmd &`) has SIGINT ignored, which a child keeps
    # across exec (so Ctrl-C could never reach it); a handler of ours is reset to the default.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "haiku.rag.cli", "--db", str(tmp_path / "lib.lancedb"), "add-zotero", str(zotero.data_dir)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        )
    finally:
        signal.signal(signal.SIGINT, inherited)
    log_file = data_dir / "logs" / "haiku-rag.log"
    try:
        # wait until the process is inside the endless query (it logs just before reading)
        for _ in range(1200):
            if log_file.is_file() and "reading the Zotero database" in log_file.read_text():
                break
            assert process.poll() is None, process.communicate()
            time.sleep(0.1)
        else:
            pytest.fail("add-zotero never started reading the database")
        process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)  # faulthandler prints where each thread is
            _, stacks = process.communicate(timeout=30)
            pytest.fail(f"add-zotero did not stop within 60 s of Ctrl-C; its threads:\n{stacks[-6000:]}")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert "cancelled" in err and "Traceback" not in err


async def test_giant_fields_are_bounded_with_a_note(client, zotero):
    db = zotero.connect()
    item = db.execute("SELECT itemID FROM items WHERE key = 'AAAA1111'").fetchone()[0]
    title_field = db.execute("SELECT fieldID FROM fields WHERE fieldName = 'title'").fetchone()[0]
    db.execute("INSERT INTO itemDataValues (valueID, value) VALUES (9000, ?)", ("Walrus " * 800_000,))  # 5.6 MB
    db.execute("UPDATE itemData SET valueID = 9000 WHERE itemID = ? AND fieldID = ?", (item, title_field))
    author = db.execute("SELECT creatorTypeID FROM creatorTypes WHERE creatorType = 'author'").fetchone()[0]
    db.execute("DELETE FROM itemCreators WHERE itemID = ?", (item,))
    for n in range(20_000):
        db.execute("INSERT INTO creators (creatorID, firstName, lastName, fieldMode) VALUES (?, 'A', ?, 0)", (10_000 + n, f"Author{n}"))
        db.execute("INSERT INTO itemCreators VALUES (?, ?, ?, ?)", (item, 10_000 + n, author, n))
    db.commit()
    db.close()

    result = await import_zotero(client, zotero.data_dir, embed=False)
    outcome = next(o for o in result.outcomes if o.key == zotero.keys["a_main"])
    assert outcome.status == "ingested"
    assert "title: cut to" in outcome.reason and f"the first {MAX_CREATORS} kept" in outcome.reason
    document = await client.get_document(outcome.document_id)
    assert len(document.title) == MAX_TITLE_CHARS
    assert len(document.metadata["bibliographic"]["creators"]) == MAX_CREATORS
    assert len(document.metadata["zotero"]["fields"]["title"]) == MAX_TITLE_CHARS
    assert document.metadata["zotero"]["shortened"]


async def test_an_empty_collection_name_is_reported_and_the_import_completes(client, zotero):
    db = zotero.connect()
    db.execute("INSERT INTO collections (collectionID, collectionName, libraryID, key) VALUES (9, '   ', 1, 'EMPTY001')")
    parent = db.execute("SELECT itemID FROM items WHERE key = 'AAAA1111'").fetchone()[0]
    db.execute("INSERT INTO collectionItems VALUES (9, ?, 0)", (parent,))
    db.commit()
    db.close()
    result = await import_zotero(client, zotero.data_dir, embed=False)
    assert result.collections == {"Reading list": 1, "Thesis": 3}
    assert ("EMPTY001", "collection not imported: a collection name cannot be empty") in result.skipped
    assert {c.name for c in await client.list_collections()} == {"Thesis", "Reading list"}
    main_doc = await client.get_document(next(o for o in result.outcomes if o.key == zotero.keys["a_main"]).document_id)
    assert main_doc.metadata["zotero"]["collections"] == ["Thesis"]
