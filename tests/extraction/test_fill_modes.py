"""Ten real PDFs x four columns, filled in each answer mode: every cell answered from its own
document, cited to the page its fact is printed on, its value read by the column's type."""

from __future__ import annotations

import pytest

from extraction.conftest import COLUMNS, Library
from extraction.papers import PAGES
from extraction.scripted import Extractor
from haiku.rag import extraction as X
from haiku.rag.client import HaikuRAG

FACT_OF_COLUMN = {"Sample size": "sample_size", "Method": "method", "Blinded": "blinded", "Dataset": "dataset"}


async def _filled(client: HaikuRAG, library: Library, options: X.FillOptions) -> X.ExtractionTable:
    table = await X.create_table(client, "Review", COLUMNS, document_ids=library.document_ids)
    events: list[X.FillEvent] = []
    filled = await X.fill_table(client, table.id, options, on_event=events.append)
    started = [e for e in events if isinstance(e, X.FillStarted)]
    done = [e for e in events if isinstance(e, X.CellFilled)]
    assert started[0].total == 40 and len(done) == 40
    assert [e.done for e in done] == list(range(1, 41))
    assert isinstance(events[-1], X.FillFinished) and events[-1].done == 40
    assert filled.filled == 40 == filled.total
    return filled


def _check_cells(table: X.ExtractionTable, library: Library, mode: str) -> None:
    for document_id in table.document_ids:
        paper = library.paper(document_id)
        for column in table.columns:
            cell = table.cell(document_id, column.id)
            assert cell is not None
            where = f"{paper.title} / {column.name}: {cell}"
            assert cell.mode == mode, where
            assert cell.status == "grounded", where
            assert cell.citations, where
            # every citation belongs to the row's document, and the cell names the fact's page
            assert {c.document_id for c in cell.citations} == {document_id}, where
            assert cell.pages[0] == PAGES[FACT_OF_COLUMN[column.name]], where
            assert cell.citations[0].boxes and {b.page for b in cell.citations[0].boxes} == {cell.pages[0]}
            assert cell.quote, where
            if column.name == "Sample size":
                assert cell.number == paper.sample_size, where
                assert str(paper.sample_size) in cell.quote
            elif column.name == "Method":
                assert paper.method in cell.value and paper.method in cell.quote, where
            elif column.name == "Blinded":
                if mode == "search-only":
                    assert "blind" in cell.quote, where
                else:
                    assert cell.value == ("yes" if paper.blinded else "no"), where
            else:
                assert paper.dataset in cell.value and paper.dataset in cell.quote, where


async def test_search_only_fills_every_cell_with_its_best_passage(client: HaikuRAG, library: Library) -> None:
    table = await _filled(client, library, X.FillOptions(mode="search-only"))
    _check_cells(table, library, "search-only")
    cell = table.cell(library.document_ids[0], table.columns[0].id)
    assert cell is not None and cell.status_label == "Best passage (no model)"


async def test_a_model_without_tools_extracts_from_passages_of_its_document(
    client: HaikuRAG, library: Library
) -> None:
    extractor = Extractor()
    table = await _filled(client, library, X.FillOptions(mode="fallback", model=extractor.fallback_model))
    _check_cells(table, library, "fallback")
    assert extractor.requests == 40


async def test_a_tool_calling_model_searches_and_cites_within_its_document(
    client: HaikuRAG, library: Library
) -> None:
    extractor = Extractor()
    table = await _filled(client, library, X.FillOptions(mode="tools", model=extractor.tools_model))
    _check_cells(table, library, "tools")
    assert extractor.requests == 40 * 3  # search, cite, answer per cell


@pytest.mark.parametrize("mode", ["fallback", "tools"])
async def test_a_fact_the_document_lacks_is_not_found(client: HaikuRAG, library: Library, mode: str) -> None:
    extractor = Extractor()
    model = extractor.tools_model if mode == "tools" else extractor.fallback_model
    table = await X.create_table(
        client, "Funding", [{"name": "Funder", "question": "Which funding body funded the study?"}],
        document_ids=library.document_ids[:2],
    )  # fmt: skip
    filled = await X.fill_table(client, table.id, X.FillOptions(mode=mode, model=model))  # type: ignore[arg-type]
    for document_id in filled.document_ids:
        cell = filled.cell(document_id, "c1")
        assert cell is not None and cell.status == "not_found" and cell.value == ""
        assert not cell.citations
