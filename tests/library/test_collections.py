"""Collections: named sets of documents stored in the library, used as a search scope."""

from __future__ import annotations

import json

import pytest

from haiku.rag.cli import main
from haiku.rag.client import HaikuRAG
from haiku.rag.collections import CollectionError, CollectionExistsError, CollectionNotFoundError
from haiku.rag.errors import DocumentNotFoundError, ReadOnlyError
from haiku.rag.store import schema


@pytest.fixture
async def client(db_path, config):
    async with HaikuRAG(db_path, config, create=True) as c:
        yield c


async def _docs(client: HaikuRAG, *texts: str):
    return [await client.create_document(t, title=t.split()[0], embed=False) for t in texts]


def _settings_version(client: HaikuRAG) -> int:
    return client.store.table(schema.SETTINGS).version


async def test_create_add_remove_rename_delete_with_counts(client):
    a, b, c = await _docs(client, "Alpha walrus migration", "Beta heron nesting", "Gamma otter dens")
    created = await client.create_collection("Chapter 1", [a.id])
    assert created.count == 1

    await client.add_to_collection("Chapter 1", [b.id, a.id])  # a is kept once
    await client.create_collection("Reading list", [c.id])
    listed = {col.name: col.count for col in await client.list_collections()}
    assert listed == {"Chapter 1": 2, "Reading list": 1}
    assert await client.collection_document_ids("Chapter 1") == [a.id, b.id]
    assert await client.collections_of(a.id) == ["Chapter 1"]

    await client.remove_from_collection("Chapter 1", [a.id])
    assert await client.collection_document_ids("Chapter 1") == [b.id]
    await client.rename_collection("Chapter 1", "Chapter one")
    assert [col.name for col in await client.list_collections()] == ["Chapter one", "Reading list"]
    with pytest.raises(CollectionNotFoundError, match="Chapter 1"):
        await client.collection_document_ids("Chapter 1")

    await client.delete_collection("Reading list")
    assert [col.name for col in await client.list_collections()] == ["Chapter one"]
    assert len(await client.list_documents()) == 3  # deleting a collection keeps its documents


async def test_bad_input_is_refused_and_writes_nothing(client):
    (a,) = await _docs(client, "Alpha walrus migration")
    await client.create_collection("Thesis", [a.id])
    before = _settings_version(client)
    with pytest.raises(DocumentNotFoundError, match="not-a-document"):
        await client.add_to_collection("Thesis", [a.id, "not-a-document"])
    with pytest.raises(CollectionExistsError):
        await client.create_collection("Thesis")
    with pytest.raises(CollectionNotFoundError):
        await client.add_to_collection("Nope", [a.id])
    for bad in ("", "   ", "tab\there", "x" * 201):
        with pytest.raises(CollectionError):
            await client.create_collection(bad)
    with pytest.raises(CollectionExistsError):
        await client.create_collection("Other")
        await client.rename_collection("Other", "Thesis")
    assert _settings_version(client) == before + 1  # only "Other" was created
    assert await client.collection_document_ids("Thesis") == [a.id]


async def test_each_change_is_one_commit_and_a_no_op_writes_nothing(client):
    a, b = await _docs(client, "Alpha walrus migration", "Beta heron nesting")
    await client.create_collection("Thesis", [a.id])
    before = _settings_version(client)
    await client.add_to_collection("Thesis", [b.id])
    assert _settings_version(client) == before + 1  # one merge_insert, never delete-then-add
    await client.add_to_collection("Thesis", [a.id, b.id])
    assert _settings_version(client) == before + 1


async def test_membership_survives_reingest_and_drops_deleted_documents(client, tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nThe walrus migrates north in spring.\n")
    first = (await client.ingest_file(path, embed=False)).document
    (other,) = await _docs(client, "Beta heron nesting")
    await client.create_collection("Field notes", [first.id, other.id])

    path.write_text("# Notes\n\nThe walrus migrates north in spring and south in autumn.\n")
    again = await client.ingest_file(path, embed=False)
    assert again.status == "updated" and again.document.id == first.id
    assert await client.collection_document_ids("Field notes") == [first.id, other.id]

    await client.delete_document(other.id)
    assert (await client.get_collection("Field notes")).count == 1


async def test_collections_are_stored_in_the_library(db_path, config):
    async with HaikuRAG(db_path, config, create=True) as client:
        (a,) = await _docs(client, "Alpha walrus migration")
        await client.create_collection("Thesis", [a.id])
    async with HaikuRAG(db_path, config, read_only=True) as reader:
        assert [(c.name, c.count) for c in await reader.list_collections()] == [("Thesis", 1)]
        with pytest.raises(ReadOnlyError):
            await reader.create_collection("Another")


async def test_a_collection_scopes_search(client):
    a, b = await _docs(client, "Walrus herds gather on the ice floes", "Walrus tusks grow all their lives")
    await client.create_collection("Ice", [a.id])
    everywhere = await client.search("walrus", search_type="fts")
    assert {r.document_id for r in everywhere} == {a.id, b.id}
    scoped = await client.search("walrus", search_type="fts", document_ids=await client.collection_document_ids("Ice"))
    assert {r.document_id for r in scoped} == {a.id}
    # with a filter too, only documents matching both
    both = await client.search("walrus", search_type="fts", filter=f"id = '{b.id}'", document_ids=[a.id])
    assert both == []


def test_cli_collections_and_search_scope(tmp_path, capsys):
    db = str(tmp_path / "lib.lancedb")
    papers = tmp_path / "papers"
    (papers / "ice").mkdir(parents=True)
    (papers / "ice" / "floes.md").write_text("# Floes\n\nWalrus herds gather on the ice floes.\n")
    (papers / "tusks.md").write_text("# Tusks\n\nWalrus tusks grow all their lives.\n")
    assert main(["--db", db, "add-src", str(papers), "--no-embed"]) == 0
    capsys.readouterr()

    assert main(["--db", db, "collections", "create", "Ice", "--folder", str(papers / "ice")]) == 0
    assert main(["--db", db, "collections", "add", "Both", "Tusks", "--create"]) == 0
    assert main(["--db", db, "collections", "add", "Both", "--folder", str(papers)]) == 0
    capsys.readouterr()
    assert main(["--db", db, "collections", "list", "--json"]) == 0
    assert {c["name"]: c["count"] for c in json.loads(capsys.readouterr().out)} == {"Both": 2, "Ice": 1}

    assert main(["--db", db, "search", "walrus", "--search-type", "fts", "--collection", "Ice", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert [h["document_title"] for h in hits] == ["Floes"]

    assert main(["--db", db, "search", "walrus", "--collection", "Missing"]) == 1
    assert "no collection named 'Missing'" in capsys.readouterr().err
    assert main(["--db", db, "collections", "delete", "Ice"]) == 0
    assert main(["--db", db, "collections", "show", "Both", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert shown["count"] == 2 and len(shown["documents"]) == 2
