"""Search-only cells (no model) take their value from a sentence or table row of the chunk
their citation highlights: never the title, a heading, a reference-list entry or form
boilerplate that share the column's words; a number column needs a figure with those words,
else the cell is not found rather than wrong."""

from __future__ import annotations

from pathlib import Path

import pdf_factory
import pymupdf
import pytest

import haiku.rag.extraction as X
from extraction.papers import library_config
from haiku.rag.answering.events import Answered, TokenFigures
from haiku.rag.citations import Citation
from haiku.rag.client import HaikuRAG

TITLE = "Total Revenue and Net Income of Orchard Mills"
FACT = "Orchard Mills reported total revenue of $4,210 million for the year, up from the year before."
BOILERPLATE = "Indicate by check mark whether the registrant reported total revenue and net income under Rule 405."
REFERENCE = "[1] Smith, J. and Lee, K. (2020). Total revenue and net income of mills. Journal of Milling 12(3): 45-67."
FILLER = (
    "The mills grind wheat and rye for bakers along the river, and the weather decided most of "
    "the harvest again this year, as the ledger of every season shows."
)


def _make_pdf(path: Path) -> pdf_factory.PdfLayout:
    layout = pdf_factory.PdfLayout(path=path, page_count=1, page_size=pdf_factory.A4)
    doc = pymupdf.open()
    doc.new_page(width=pdf_factory.A4[0], height=pdf_factory.A4[1])
    w = pdf_factory._PageWriter(layout, doc[0], 1)
    w.block("title", "title", [TITLE], size=pdf_factory.TITLE_SIZE, bold=True, space_after=14)
    w.block("h_revenue", "h1", ["Total revenue"], size=14.0, bold=True)
    w.paragraph("p_boiler", BOILERPLATE)
    w.paragraph("p_filler", FILLER)
    w.paragraph("p_fact", FACT)
    w.block("h_income", "h1", ["Net income"], size=14.0, bold=True)
    w.paragraph("p_filler2", FILLER)
    w.block("h_refs", "h1", ["References"], size=14.0, bold=True)
    w.paragraph("p_ref", REFERENCE)
    doc.set_metadata({"title": TITLE})
    doc.save(path)
    doc.close()
    return layout


@pytest.fixture
async def filled(tmp_path: Path) -> tuple[X.ExtractionTable, str, pdf_factory.PdfLayout]:
    layout = _make_pdf(tmp_path / "mills.pdf")
    async with HaikuRAG(tmp_path / "library.lancedb", library_config(tmp_path), create=True) as client:
        outcome = await client.ingest_file(layout.path)
        assert outcome.status == "ingested", outcome.reason
        doc = outcome.document.id
        table = await X.create_table(
            client, "Mills",
            [{"name": "Total revenue", "type": "number"}, {"name": "Net income", "type": "number"},
             {"name": "Company pays a dividend", "type": "yes-no"}, {"name": "Revenue", "question": "What total revenue did the mills report?"}],
            document_ids=[doc],
        )  # fmt: skip
        return await X.fill_table(client, table.id, X.FillOptions(mode="search-only")), doc, layout


def _cell(table: X.ExtractionTable, doc: str, name: str) -> X.Cell:
    cell = table.cell(doc, next(c.id for c in table.columns if c.name == name))
    assert cell is not None
    return cell


async def test_a_number_cell_is_the_sentence_stating_the_figure_not_the_title_heading_or_reference(filled) -> None:
    table, doc, layout = filled
    cell = _cell(table, doc, "Total revenue")
    assert cell.status == "grounded", cell
    assert cell.value == FACT and cell.quote == FACT, cell.value
    assert cell.number == 4210
    # the citation highlights that sentence's paragraph, not the title or the heading above it
    fact = layout.blocks["p_fact"].rect
    boxes = cell.citations[0].boxes
    assert boxes and all(b.page == 1 and b.y0 >= fact[1] - 2 and b.y1 <= fact[3] + 2 for b in boxes), boxes


async def test_a_number_cell_without_a_stated_figure_is_not_found(filled) -> None:
    table, doc, _ = filled
    # "Net income" is in the title, a heading, the boilerplate and the reference, never stated
    cell = _cell(table, doc, "Net income")
    assert cell.status == "not_found", cell.value
    assert cell.value == "" and not cell.citations


async def test_a_text_cell_is_never_a_heading_title_reference_or_boilerplate(filled) -> None:
    table, doc, _ = filled
    assert _cell(table, doc, "Revenue").value == FACT
    dividend = _cell(table, doc, "Company pays a dividend")
    assert dividend.status == "not_found", dividend.value


def _search_cell(column: X.Column, *chunks: tuple[str, str, list[str]]) -> X.Cell:
    """The search-only cell of passages whose highlighted chunk is ``matched`` inside a wider
    ``content`` (the context expansion added), under ``headings``."""
    citations = tuple(
        Citation(
            index=n + 1, chunk_id=f"{n + 1:032x}", document_id="row-doc",
            document_uri="file:///row-doc.pdf", document_title=TITLE, content=content,
            matched_text=matched, headings=headings, page_numbers=[n + 1],
        )
        for n, (content, matched, headings) in enumerate(chunks)
    )  # fmt: skip
    answered = Answered(
        text="", citations=citations, grounding="grounded", basis="search-results",
        mode="search-only", tokens=TokenFigures(),
    )  # fmt: skip
    return X.cell_from_answer(answered, "row-doc", column.model_copy(update={"id": "c1"}))


def test_a_number_cell_takes_the_table_row_labelled_with_the_columns_words() -> None:
    table = (
        "| ($ in millions) | 2023 | 2022 |\n|---|---|---|\n"
        "| Cost of sales | 2,900 | 2,750 |\n| Total revenue | 4,210 | 3,980 |\n"
    )
    # the context around the chunk holds a sentence with the words and a figure, but the
    # citation highlights the table: the value comes from the highlighted chunk only
    context = "Total revenue rose by 6 percent, as Note 4 explains.\n\n"
    cell = _search_cell(
        X.Column(name="Total revenue", type="number"),
        (f"{context}Consolidated Statement of Income\n\n{table}", f"Consolidated Statement of Income\n\n{table}", ["Results"]),
    )
    assert cell.status == "grounded" and "Total revenue" in cell.value and "4,210" in cell.value, cell.value
    assert cell.quote == cell.value


def test_reference_lists_boilerplate_captions_and_lead_ins_never_make_a_value() -> None:
    column = X.Column(name="Net income", type="number")
    refs = "[2] Doe, A. (2021). Net income of 40 firms. Review 8: 1-20.\nDoe, A., and Roe, B. 2019. Net income in 12 markets."
    boiler = "☐ Net income of 2 registrants, indicate by check mark.\nTable 3: Net income by segment, 2021 to 2023"
    boiler += "\nThe following table shows net income per share (shares in 000's):"
    cell = _search_cell(column, (refs, refs, ["Discussion"]), (refs, refs, ["7 References"]), (boiler, boiler, ["Cover"]))
    assert cell.status == "not_found" and not cell.value and not cell.citations, cell.value


def test_a_reference_list_in_another_language_never_makes_a_value() -> None:
    # the names search demotes (haiku.rag.search.references), in French, German and Spanish
    column = X.Column(name="Net income", type="number")
    entry = "Dupont, J. (2021). Net income of 40 firms in the alpine valleys. Revue 8: 1-20."
    for heading in ("Références", "Literaturverzeichnis", "Referencias bibliográficas"):
        cell = _search_cell(column, (entry, entry, [heading]))
        assert cell.status == "not_found" and not cell.value, (heading, cell.value)
        lines = f"The mills reported their results.\n{heading}\n{entry}"
        cell = _search_cell(column, (lines, lines, ["Discussion"]))
        assert cell.status == "not_found" and not cell.value, (heading, cell.value)
