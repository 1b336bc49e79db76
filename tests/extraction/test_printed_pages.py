"""An evidence table's cells name their pages as printed (DEFECTS 20:02): the CSV/XLSX/Markdown
source column ("Finch, 2004, p. 23") and the cell's page in the table, for a book whose PDF
sheet 8 prints 23. A document without labels is cited by its sheets, as before."""

from __future__ import annotations

from haiku.rag.bibliography import Bibliographic, Creator
from haiku.rag.citations import Box, Citation
from haiku.rag.extraction.export import source_label
from haiku.rag.extraction.models import Cell

FINCH = Bibliographic(creators=[Creator(given="Ada", family="Finch")], year=2004)


def _cell(labels: dict[int, str]) -> Cell:
    citation = Citation(
        index=1, chunk_id="c", document_id="d", document_uri="file:///quokkas.pdf", content="text",
        page_numbers=[8, 9], boxes=[Box(8, 1, 2, 3, 4), Box(9, 1, 2, 3, 4)], page_labels=labels,
    )  # fmt: skip
    return Cell(document_id="d", column_id="k", value="v", citations=[citation])


def test_an_evidence_cell_names_its_pages_as_printed():
    cell = _cell({8: "23", 9: "24"})
    assert source_label(FINCH, "quokkas", cell) == "Finch, 2004, pp. 23–24"
    assert cell.first_page == "p. 23"
    plain = _cell({})
    assert source_label(FINCH, "quokkas", plain) == "Finch, 2004, pp. 8–9" and plain.first_page == "p. 8"
