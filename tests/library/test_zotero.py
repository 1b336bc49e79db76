"""Zotero import: a generated Zotero data directory (3 items, 4 PDF attachments, 2 collections,
one missing file) imported with its metadata and collections; re-runs write only changes."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pdf_factory
import pytest
import zotero_factory as zf

from haiku.rag.bibliography import author_year_citation, bibliographic
from haiku.rag.cli import main
from haiku.rag.client import HaikuRAG
from haiku.rag.store import schema
from haiku.rag.zotero import ZoteroError, import_zotero, parse_zotero_date


@pytest.fixture
async def client(db_path, config):
    async with HaikuRAG(db_path, config, create=True) as c:
        yield c


@pytest.fixture
def zotero(tmp_path):
    return zf.build_library(tmp_path)


def _versions(client: HaikuRAG) -> dict[str, int]:
    return {n: client.store.table(n).version for n in schema.TABLES if client.store.has_table(n)}


def _by_key(result):
    return {o.key: o for o in result.outcomes}


async def _check_first_import(client: HaikuRAG, zotero: zf.ZoteroFixture) -> None:
    result = await import_zotero(client, zotero.data_dir, embed=False)
    outcomes = _by_key(result)
    keys = zotero.keys
    assert {k: outcomes[keys[k]].status for k in ("a_main", "a_supplement", "b_linked", "c_missing")} == {
        "a_main": "ingested", "a_supplement": "ingested", "b_linked": "ingested", "c_missing": "missing",
    }
    assert "otters.pdf" in outcomes[keys["c_missing"]].reason and "missing" in outcomes[keys["c_missing"]].reason
    assert [k for k, _ in result.skipped] == [keys["a_snapshot"]]

    main_doc = await client.get_document(outcomes[keys["a_main"]].document_id)
    assert main_doc.uri == f"zotero://select/library/items/{keys['a_main']}"
    assert main_doc.title == zf.PAPER_A["title"]
    record = bibliographic(main_doc.metadata)
    assert [(c.given, c.family) for c in record.creators] == [("Marta", "Kowalczyk"), ("Jonas", "Ekberg"), ("Li", "Wen")]
    assert (record.year, record.date, record.item_type) == (2017, "2017-06-12", "journalArticle")
    assert (record.doi, record.venue, record.volume, record.issue, record.pages) == (
        "10.5555/walrus.2017.6", "Journal of Polar Computing", "12", "3", "101-115",
    )
    assert (record.url, record.tags, record.zotero_key, record.source) == (
        "https://example.org/walrus", ["attention", "walrus"], "AAAA1111", "zotero",
    )
    z = main_doc.metadata["zotero"]
    assert z["collections"] == ["Thesis"] and z["link_mode"] == "imported_file"
    assert z["annotations"] == [
        {"key": "ANNO0001", "type": "highlight", "text": "halves the energy budget", "comment": "key result",
         "color": "#ffd400", "page_label": "2", "page": 2}
    ]
    linked = await client.get_document(outcomes[keys["b_linked"]].document_id)
    assert linked.metadata["zotero"]["link_mode"] == "linked_file"
    assert author_year_citation(main_doc.metadata, [6]) == "(Kowalczyk et al., 2017, p. 6)"
    assert author_year_citation(linked.metadata, [1]) == "(Haddad and de Vries, 2021, p. 1)"

    collections = {c.name: set(c.document_ids) for c in await client.list_collections()}
    ids = {k: outcomes[keys[k]].document_id for k in ("a_main", "a_supplement", "b_linked")}
    assert collections == {"Thesis": {ids["a_main"], ids["a_supplement"], ids["b_linked"]}, "Reading list": {ids["b_linked"]}}
    assert result.collections == {"Reading list": 1, "Thesis": 3}
    # the text is searchable and page-cited
    hits = await client.search("energy budget buoy network", search_type="fts", limit=1)
    assert hits[0].document_id == ids["a_main"] and 2 in hits[0].page_numbers
    assert any(b.page == 2 for b in hits[0].boxes)


async def test_zotero_library_imports_with_metadata_and_collections(client, zotero):
    await _check_first_import(client, zotero)


async def test_second_run_writes_nothing(client, zotero):
    await import_zotero(client, zotero.data_dir, embed=False)
    before = _versions(client)
    again = await import_zotero(client, zotero.data_dir, embed=False)
    assert {o.status for o in again.outcomes} == {"unchanged", "missing"}
    assert not again.wrote_anything and again.collections_written == []
    assert _versions(client) == before


async def test_a_rerun_imports_only_what_changed(client, zotero):
    first = _by_key(await import_zotero(client, zotero.data_dir, embed=False))
    keys = zotero.keys
    db = zotero.connect()
    db.execute("UPDATE itemDataValues SET value = 'Sparse Walrus Attention, Revised' WHERE value = ?", (zf.PAPER_A["title"],))
    # B joins nothing new; A leaves "Thesis"
    db.execute("DELETE FROM collectionItems WHERE collectionID = 1 AND itemID = (SELECT itemID FROM items WHERE key = 'AAAA1111')")
    db.commit()
    db.close()
    pdf_factory.make_paper_pdf(
        zotero.data_dir / "storage" / keys["a_supplement"] / "supplement.pdf", title="Supplementary material v2",
        authors=["Marta Kowalczyk"], paragraphs=["Recalibrated hydrophone tables after the storm."], pages=1,
    )
    again = _by_key(await import_zotero(client, zotero.data_dir, embed=False))
    assert again[keys["a_main"]].status == "metadata"
    assert again[keys["a_supplement"]].status == "updated"
    assert again[keys["b_linked"]].status == "unchanged"
    assert again[keys["a_supplement"]].document_id == first[keys["a_supplement"]].document_id
    main_doc = await client.get_document(again[keys["a_main"]].document_id)
    assert main_doc.title == "Sparse Walrus Attention, Revised"
    assert bibliographic(main_doc.metadata).title == "Sparse Walrus Attention, Revised"
    assert await client.collection_document_ids("Thesis") == [again[keys["b_linked"]].document_id]
    assert len(await client.list_documents()) == 3
    assert (await client.search("recalibrated storm", search_type="fts"))[0].document_id == first[keys["a_supplement"]].document_id


async def test_members_added_in_the_app_are_kept(client, zotero):
    await import_zotero(client, zotero.data_dir, embed=False)
    own = await client.create_document("A note of my own about walruses", embed=False)
    await client.add_to_collection("Thesis", [own.id])
    again = await import_zotero(client, zotero.data_dir, embed=False)
    assert not again.wrote_anything
    assert own.id in await client.collection_document_ids("Thesis")


async def test_reads_a_copy_while_zotero_holds_its_lock(client, zotero):
    before = hashlib.sha256(zotero.database.read_bytes()).hexdigest()
    holder = sqlite3.connect(zotero.database)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")  # as Zotero does while it runs
    try:
        with pytest.raises(sqlite3.OperationalError):
            sqlite3.connect(zotero.database, timeout=0.1).execute("SELECT count(*) FROM items").fetchone()
        result = await import_zotero(client, zotero.data_dir, embed=False)
    finally:
        holder.rollback()
        holder.close()
    assert result.counts() == {"ingested": 3, "missing": 1}
    assert hashlib.sha256(zotero.database.read_bytes()).hexdigest() == before


async def test_bad_sources_get_clear_errors(client, tmp_path):
    with pytest.raises(ZoteroError, match="does not exist"):
        await import_zotero(client, tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ZoteroError, match="no zotero.sqlite"):
        await import_zotero(client, tmp_path / "empty")
    (tmp_path / "fake.sqlite").write_bytes(b"not a database at all, really")
    with pytest.raises(ZoteroError, match="not an SQLite database"):
        await import_zotero(client, tmp_path / "fake.sqlite")
    assert await client.list_documents() == []


def test_zotero_dates():
    assert parse_zotero_date("2021-00-00 2021") == ("2021", 2021)
    assert parse_zotero_date("2019-03-00 March 2019") == ("2019-03", 2019)
    assert parse_zotero_date("2017-06-12 June 12, 2017") == ("2017-06-12", 2017)
    assert parse_zotero_date("0000-00-00 Spring 1998") == ("1998", 1998)
    assert parse_zotero_date("") == (None, None)


def test_cli_add_zotero_twice(tmp_path, zotero, capsys):
    db = str(tmp_path / "lib.lancedb")
    assert main(["--db", db, "add-zotero", str(zotero.database), "--no-embed", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"ingested": 3, "missing": 1}
    assert main(["--db", db, "add-zotero", str(zotero.data_dir), "--no-embed"]) == 0
    out = capsys.readouterr().out
    assert "3 unchanged" in out and "1 missing" in out and "collection Thesis: 3 document(s) (unchanged)" in out
    assert main(["--db", db, "add-zotero", str(tmp_path / "nowhere")]) == 1
    assert "does not exist" in capsys.readouterr().err


async def test_full_zotero_schema(client, tmp_path, shared_data):
    schema_dir = shared_data / "zotero_schema"
    if not schema_dir.is_dir():
        pytest.skip("no Zotero schema in the shared data")
    ddl = (schema_dir / "system.sql").read_text() + "\n" + (schema_dir / "userdata.sql").read_text()
    await _check_first_import(client, zf.build_library(tmp_path, ddl=ddl))
