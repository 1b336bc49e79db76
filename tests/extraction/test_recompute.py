"""Re-running one cell, one row or one column recomputes just that; a hand edit is kept."""

from __future__ import annotations

import pytest

from extraction.conftest import COLUMNS, Library
from extraction.scripted import Extractor
from haiku.rag import extraction as X
from haiku.rag.client import HaikuRAG
from haiku.rag.extraction.errors import ExtractionError


async def _searched(client: HaikuRAG, library: Library) -> X.ExtractionTable:
    table = await X.create_table(client, "Review", COLUMNS[:3], document_ids=library.document_ids[:3])
    return await X.fill_table(client, table.id, X.FillOptions(mode="search-only"))


def _changed(before: X.ExtractionTable, after: X.ExtractionTable) -> set[tuple[str, str]]:
    return {
        (cell.document_id, cell.column_id)
        for key, cell in after.cells.items()
        if before.cells.get(key) != cell
    }


async def test_recompute_one_cell(client: HaikuRAG, library: Library) -> None:
    before = await _searched(client, library)
    row = before.document_ids[1]
    extractor = Extractor()
    options = X.FillOptions(mode="fallback", model=extractor.fallback_model)
    after = await X.fill_table(client, before.id, options, rows=[row], columns=["c1"], recompute=True)
    assert _changed(before, after) == {(row, "c1")}
    assert extractor.requests == 1
    cell = after.cell(row, "c1")
    assert cell is not None and cell.mode == "fallback" and cell.number == library.paper(row).sample_size


async def test_without_recompute_a_filled_table_asks_nothing(client: HaikuRAG, library: Library) -> None:
    before = await _searched(client, library)
    extractor = Extractor()
    after = await X.fill_table(client, before.id, X.FillOptions(mode="fallback", model=extractor.fallback_model))
    assert extractor.requests == 0 and after.cells == before.cells


@pytest.mark.parametrize("select", ["row", "column"])
async def test_recompute_a_row_or_a_column(client: HaikuRAG, library: Library, select: str) -> None:
    before = await _searched(client, library)
    extractor = Extractor()
    options = X.FillOptions(mode="fallback", model=extractor.fallback_model)
    if select == "row":
        row = before.document_ids[2]
        after = await X.fill_table(client, before.id, options, rows=[row], recompute=True)
        expected = {(row, c.id) for c in before.columns}
    else:
        after = await X.fill_table(client, before.id, options, columns=["c2"], recompute=True)
        expected = {(r, "c2") for r in before.document_ids}
    assert _changed(before, after) == expected
    assert extractor.requests == len(expected)


async def test_a_hand_edit_is_kept_and_marked(client: HaikuRAG, library: Library) -> None:
    before = await _searched(client, library)
    row = before.document_ids[0]
    searched = before.cell(row, "c2")
    assert searched is not None
    edited = await X.set_value(client, before.id, row, "c2", "RCT (checked by hand)")
    assert edited.status == "edited" and edited.edited_from == searched.value
    assert edited.citations == searched.citations  # still points at its evidence

    extractor = Extractor()
    options = X.FillOptions(mode="fallback", model=extractor.fallback_model)
    kept = await X.fill_table(client, before.id, options, columns=["c2"], recompute=True)
    assert kept.cell(row, "c2") == edited
    assert extractor.requests == 2  # the other two rows

    replaced = await X.fill_table(
        client, before.id, options, rows=[row], columns=["c2"], recompute=True, keep_edited=False
    )
    cell = replaced.cell(row, "c2")
    assert cell is not None and cell.status == "grounded" and cell.mode == "fallback"


async def test_changing_a_question_empties_its_column_only(client: HaikuRAG, library: Library) -> None:
    before = await _searched(client, library)
    row = before.document_ids[0]
    await X.set_value(client, before.id, row, "c2", "by hand")
    await X.update_column(client, before.id, "c2", question="Which research design did the authors use?")
    after = await X.load_table(client, before.id)
    assert after.missing() == [(r, "c2") for r in before.document_ids[1:]]
    assert after.cell(row, "c2") is not None  # the hand edit stays
    renamed = await X.update_column(client, before.id, "c1", name="Participants")
    assert renamed.name == "Participants"
    assert (await X.load_table(client, before.id)).missing() == after.missing()  # a rename asks the same


async def test_an_unknown_row_or_column_is_refused(client: HaikuRAG, library: Library) -> None:
    before = await _searched(client, library)
    with pytest.raises(ExtractionError, match="no column"):
        await X.fill_table(client, before.id, columns=["c9"], recompute=True)
    with pytest.raises(ExtractionError, match="no row"):
        await X.set_value(client, before.id, library.document_ids[9], "c1", "5")


async def test_progress_counts_cells(client: HaikuRAG, library: Library) -> None:
    from haiku.rag.operations import Progress, Stage

    table = await X.create_table(client, "Counted", COLUMNS[:2], document_ids=library.document_ids[:2])
    seen: list[Progress] = []
    await X.fill_table(client, table.id, X.FillOptions(mode="search-only"), progress=seen.append)
    assert [(p.stage, p.source, p.done, p.total) for p in seen] == [
        (Stage.EXTRACTING, "Counted", n, 4) for n in range(5)
    ]
    assert [p.message for p in seen[:4]] == ["Sample size", "Method", "Sample size", "Method"]
