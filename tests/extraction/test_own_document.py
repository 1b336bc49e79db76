"""A cell cites only its own row's document, and a value its cited text does not hold is
marked low confidence."""

from __future__ import annotations

import pytest

from extraction.conftest import COLUMNS, Library
from extraction.scripted import Extractor
from haiku.rag import extraction as X
from haiku.rag.answering.events import Answered, TokenFigures
from haiku.rag.citations import Citation
from haiku.rag.client import HaikuRAG
from haiku.rag.extraction.cells import NOT_IN_CITED_TEXT, REFUSED_OTHER_DOCUMENT


async def _other_chunk(client: HaikuRAG, document_id: str) -> str:
    chunks = await client.get_chunks(await client.get_document(document_id))
    return chunks[0].id


async def test_a_model_citing_another_document_is_refused(client: HaikuRAG, library: Library) -> None:
    row, other = library.document_ids[0], library.document_ids[1]
    foreign = await _other_chunk(client, other)
    extractor = Extractor(cite_also=foreign)
    table = await X.create_table(client, "Scope", COLUMNS[:2], document_ids=[row])
    filled = await X.fill_table(client, table.id, X.FillOptions(mode="tools", model=extractor.tools_model))
    for column in filled.columns:
        cell = filled.cell(row, column.id)
        assert cell is not None and cell.citations
        assert all(c.document_id == row for c in cell.citations)
        assert foreign not in {c.chunk_id for c in cell.citations}
    # the engine told the model the foreign id was not registered
    assert all("not registered" in reply for reply in extractor.refused_replies)


def _citation(index: int, document_id: str, text: str) -> Citation:
    return Citation(
        index=index, chunk_id=f"{index:032x}", document_id=document_id,
        document_uri=f"file:///{document_id}.pdf", content=text, page_numbers=[index],
    )  # fmt: skip


def test_a_citation_naming_another_document_is_dropped_and_the_cell_marked() -> None:
    own = _citation(1, "row-doc", "We enrolled 120 participants from the district.")
    foreign = _citation(2, "other-doc", "We enrolled 48 participants from the district.")
    answered = Answered(
        text="120 participants [1] [2].", citations=(own, foreign), grounding="grounded",
        basis="cited", mode="tools", tokens=TokenFigures(),
    )  # fmt: skip
    column = X.Column.of(COLUMNS[0]).model_copy(update={"id": "c1"})
    cell = X.cell_from_answer(answered, "row-doc", column)
    assert [c.document_id for c in cell.citations] == ["row-doc"]
    assert cell.status == "low_confidence"
    assert REFUSED_OTHER_DOCUMENT in cell.reasons
    assert cell.number == 120 and cell.pages == [1]


def test_only_foreign_citations_leave_the_cell_uncited() -> None:
    foreign = _citation(1, "other-doc", "We enrolled 48 participants from the district.")
    answered = Answered(
        text="48 participants [1].", citations=(foreign,), grounding="grounded",
        basis="cited", mode="fallback", tokens=TokenFigures(),
    )  # fmt: skip
    column = X.Column.of(COLUMNS[0]).model_copy(update={"id": "c1"})
    cell = X.cell_from_answer(answered, "row-doc", column)
    assert cell.citations == [] and cell.status == "low_confidence" and cell.quote == ""


@pytest.mark.parametrize("mode", ["tools", "fallback"])
async def test_a_value_not_in_its_cited_text_is_low_confidence(
    client: HaikuRAG, library: Library, mode: str
) -> None:
    extractor = Extractor(answer_override="412 participants")
    model = extractor.tools_model if mode == "tools" else extractor.fallback_model
    row = library.document_ids[0]
    table = await X.create_table(client, "Wrong", COLUMNS[:1], document_ids=[row])
    filled = await X.fill_table(client, table.id, X.FillOptions(mode=mode, model=model))  # type: ignore[arg-type]
    cell = filled.cell(row, "c1")
    assert cell is not None and cell.citations
    assert cell.status == "low_confidence", cell.reasons
    assert NOT_IN_CITED_TEXT in cell.reasons
    assert cell.number == 412


def test_search_only_reads_a_figure_only_from_a_sentence_with_one() -> None:
    column = X.Column.of(COLUMNS[0]).model_copy(update={"id": "c1"})

    def cell_for(text: str) -> X.Cell:
        passage = _citation(1, "row-doc", text)
        answered = Answered(
            text="", citations=(passage,), grounding="grounded", basis="search-results",
            mode="search-only", tokens=TokenFigures(),
        )  # fmt: skip
        return X.cell_from_answer(answered, "row-doc", column)

    one = cell_for("We enrolled 120 participants from the district.")
    assert (one.number, one.unit) == (120, "participants") and one.mode == "search-only"
    two = cell_for("In 2019 we enrolled 120 participants from the district.")
    assert two.number is None and "120 participants" in two.value
