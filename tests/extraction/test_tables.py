"""Tables per library: created from ids or a collection, listed, loaded, renamed, deleted,
kept across a relaunch; bad input refused with a specific error and nothing changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extraction.conftest import COLUMNS, Library, open_client
from haiku.rag import extraction as X
from haiku.rag.client import HaikuRAG
from haiku.rag.extraction.errors import ExtractionError, TableExistsError, TableNotFoundError


async def test_tables_are_kept_per_library(library: Library, tmp_path: Path) -> None:
    async with open_client(library, tmp_path) as client:
        await client.create_collection("Trials", library.document_ids[:4])
        made = await X.create_table(client, "Trials review", COLUMNS, collection="Trials")
        other = await X.create_table(client, "another", ["Main finding"], document_ids=library.document_ids[5:7])
        assert made.document_ids == library.document_ids[:4] and made.collection == "Trials"
        assert [c.id for c in made.columns] == ["c1", "c2", "c3", "c4"]
        assert other.columns[0].question == "" and other.columns[0].prompt.startswith("Main finding")
    async with open_client(library, tmp_path) as client:
        assert [t.name for t in await X.list_tables(client)] == ["another", "Trials review"]
        loaded = await X.load_table(client, "TRIALS REVIEW")
        assert loaded.id == made.id and loaded.columns == made.columns and loaded.cells == {}
        renamed = await X.rename_table(client, made.id, "Trials, final")
        assert (await X.load_table(client, "trials, final")).id == renamed.id
        await X.delete_table(client, renamed.id)
        assert [t.name for t in await X.list_tables(client)] == ["another"]
        with pytest.raises(TableNotFoundError, match="tables: another"):
            await X.load_table(client, "Trials, final")


async def test_bad_input_is_refused(client: HaikuRAG, library: Library) -> None:
    ids = library.document_ids[:2]
    await X.create_table(client, "Review", COLUMNS, document_ids=ids)
    with pytest.raises(TableExistsError):
        await X.create_table(client, " review ", COLUMNS, document_ids=ids)
    with pytest.raises(ExtractionError, match="column type must be one of"):
        await X.create_table(client, "T2", [{"name": "x", "type": "date"}], document_ids=ids)
    with pytest.raises(ExtractionError, match="at least two categories"):
        await X.create_table(client, "T2", [{"name": "x", "type": "category", "categories": ["a"]}], document_ids=ids)
    with pytest.raises(ExtractionError, match="already has a column named"):
        await X.create_table(client, "T2", ["Method", "method"], document_ids=ids)
    with pytest.raises(ExtractionError, match="no document with id nope"):
        await X.create_table(client, "T2", ["Method"], document_ids=["nope"])
    with pytest.raises(ExtractionError, match="as document ids or as a collection"):
        await X.create_table(client, "T2", ["Method"])
    with pytest.raises(ExtractionError, match="cannot be empty"):
        await X.create_table(client, "  ", ["Method"], document_ids=ids)
    assert [t.name for t in await X.list_tables(client)] == ["Review"]


async def test_columns_and_rows_change(client: HaikuRAG, library: Library) -> None:
    table = await X.create_table(client, "Review", COLUMNS[:2], document_ids=library.document_ids[:3])
    await X.fill_table(client, table.id, X.FillOptions(mode="search-only"))
    added = await X.add_column(client, table.id, {"name": "Kind", "type": "category", "categories": ["trial", "survey"]})
    assert added.id == "c3" and "Answer with exactly one of: trial; survey." in added.prompt
    await X.remove_column(client, table.id, "c1")
    await X.set_rows(client, table.id, [library.document_ids[2], library.document_ids[7]])
    loaded = await X.load_table(client, table.id)
    assert [c.id for c in loaded.columns] == ["c2", "c3"]
    assert set(loaded.cells) == {X.cell_key(library.document_ids[2], "c2")}
    assert sorted(loaded.missing()) == sorted(
        [(library.document_ids[2], "c3"), (library.document_ids[7], "c2"), (library.document_ids[7], "c3")]
    )
    assert await X.clear_cells(client, table.id) == 1


async def test_a_deleted_documents_row_stays_marked_removed_with_its_cells(
    client: HaikuRAG, library: Library, tmp_path: Path
) -> None:
    """Deleting a document took its row and filled cells out of every table. The row stays,
    marked removed from the library, with its values and quotes (as a chat keeps a removed
    document's quote): it is not filled again, not counted, survives a change of the table,
    and the exports say so. Dropping it is a choice of its own."""
    ids = library.document_ids
    table = await X.create_table(client, "Review", COLUMNS[:1], document_ids=ids[:3])
    await X.fill_table(client, table.id, X.FillOptions(mode="search-only"))
    before = await X.load_table(client, table.id)
    kept = before.cell(ids[1], "c1")
    assert kept is not None and kept.citations
    await client.delete_document(ids[1])

    loaded = await X.load_table(client, table.id)
    assert loaded.document_ids == [ids[0], ids[2]]
    assert loaded.removed_document_ids == [ids[1]]
    assert loaded.cell(ids[1], "c1") == kept  # its value, quote and citations kept
    assert loaded.filled == 2 == loaded.total  # the rows to fill: the documents still there
    assert loaded.removed_title(ids[1]) == kept.citations[0].document_title
    assert loaded.missing() == []
    with pytest.raises(ExtractionError, match="no row for document"):
        loaded.selection([ids[1]])  # never filled or cleared again

    added = await X.add_column(client, table.id, COLUMNS[1])  # a change of the table keeps it
    await X.fill_table(client, table.id, X.FillOptions(mode="search-only"))
    loaded = await X.load_table(client, table.id)
    assert loaded.removed_document_ids == [ids[1]] and loaded.cell(ids[1], "c1") == kept
    assert loaded.cell(ids[1], added.id) is None  # the new column is not asked of it
    assert loaded.filled == loaded.total == 4

    await X.export_table(client, table.id, "csv", tmp_path / "review.csv")
    lines = (tmp_path / "review.csv").read_text().splitlines()
    (removed_line,) = [line for line in lines if "removed from the library" in line]
    assert removed_line.startswith(f"{loaded.removed_title(ids[1])} (removed from the library)")
    assert kept.value.split()[0] in removed_line  # its value kept in the export
    await X.export_table(client, table.id, "json", tmp_path / "review.json")
    exported = json.loads((tmp_path / "review.json").read_text())
    assert [r["removed"] for r in exported["rows"]] == [False, False, True]

    dropped = await X.drop_removed_rows(client, table.id)
    assert dropped.removed_document_ids == []
    loaded = await X.load_table(client, table.id)
    assert loaded.removed_document_ids == [] and loaded.cell(ids[1], "c1") is None


async def test_a_large_fill_leaves_the_settings_table_compacted(client: HaikuRAG, library: Library) -> None:
    from haiku.rag.store.engine import SMALL_FRAGMENTS_BEFORE_MAINTENANCE

    extra = [{"name": f"Extra {n}", "question": f"What does the paper say about {word}?"} for n, word in
             enumerate(["limitations", "seasons", "districts"])]  # fmt: skip
    table = await X.create_table(client, "Large", [*COLUMNS, *extra], document_ids=library.document_ids)
    assert table.total > SMALL_FRAGMENTS_BEFORE_MAINTENANCE  # one write per cell
    filled = await X.fill_table(client, table.id, X.FillOptions(mode="search-only"))
    assert filled.filled == table.total
    stats = client.store.table("settings").stats()
    assert stats["fragment_stats"]["num_small_fragments"] < SMALL_FRAGMENTS_BEFORE_MAINTENANCE
    assert (await X.load_table(client, table.id)).cells == filled.cells  # nothing lost
