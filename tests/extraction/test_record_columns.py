"""A year, authors, title, venue or DOI column is answered from the row's bibliographic record
(the library keeps one per document), in every mode, cited where the document's own first pages
name the value: never its reference list, never another document. A search-only cell that is
not found says why: the document never names the column's words, or names them only where no
sentence can be a value.

Real parts: PDFs generated with PyMuPDF (``pdf_factory.make_paper_pdf``), ingested into a real
LanceDB library in a temp dir with their records; a ``FunctionModel`` for the fallback mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pdf_factory
import pytest
import pytest_asyncio
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from extraction.papers import library_config
from haiku.rag import extraction as X
from haiku.rag.client import HaikuRAG

_FILLER = (
    "Otters were watched from the bank on calm evenings. The river ran slowly past the reeds. "
    "Notes were kept in a waterproof book and copied out each week."
)


@dataclass(frozen=True)
class Rows:
    named: str  # its first page names its year, venue and DOI; its record has them
    in_references: str  # its record's year is named only in its reference list
    edited: str  # a person edited its record: a year its text never names
    no_year: str  # its record has no year
    heading_only: str  # names "Funding" only as a heading


def _record(title: str, authors: list[tuple[str, str]], source: str, **fields: object) -> dict:
    creators = [{"family": family, "given": given} for given, family in authors]
    return {"bibliographic": {"title": title, "creators": creators, "source": source, **fields}}


@pytest_asyncio.fixture
async def rows_client(tmp_path: Path):
    root = tmp_path
    specs = {
        "named": dict(
            title="Lantern otters at dusk", authors=["Mara Quill1", "Tobias Fenwick2"],  # affiliation marks
            header_lines=["Journal of Lantern Studies 12 (2019) 44-61", "doi:10.5555/lantern.2019.44"],
            paragraphs=[
                "We followed otters along the river at dusk with camera traps at twelve sites.", _FILLER,
                "Later visits in 2016 found fewer dens.", _FILLER,
                "References", "Quill, M., and Fenwick, T. (2019). Earlier otters. Journal of Lantern Studies 9, 1-9.",
            ],
            record=_record(
                "Lantern otters at dusk", [("Mara", "Quill"), ("Tobias", "Fenwick")], "first-page",
                year=2019, venue="Journal of Lantern Studies", doi="10.5555/lantern.2019.44",
            ),
        ),
        "in_references": dict(
            title="Copper bridges in the rain", authors=["Ivo Marrow"],
            paragraphs=[
                "Cable corrosion was measured on seven bridges after each storm.", _FILLER,
                "Corrosion doubled after heavy rain in every season.", _FILLER,
                "References", "Marrow, I. (2014). Rust and rain. Bridge Notes 3, 5-8.",
            ],
            record=_record("Copper bridges in the rain", [("Ivo", "Marrow")], "pdf-info", year=2014),
        ),
        "edited": dict(
            title="Frost tea harvests", authors=["Lena Ardent"],
            paragraphs=["Night frost sweetened the leaves of the tea bushes.", _FILLER, _FILLER],
            record=_record("Frost tea harvests", [("Lena", "Ardent")], "user", year=2021),
        ),
        "no_year": dict(
            title="Kestrel comets", authors=["Hal Vard"],
            paragraphs=["Comet tails brightened in spring, as the kestrels returned.", _FILLER, _FILLER],
            record=_record("Kestrel comets", [("Hal", "Vard")], "first-page"),
        ),
        "heading_only": dict(
            title="Moss cheese caves", authors=["Dun More"],
            paragraphs=["Cave moss slowed the ageing of the cheese.", _FILLER, "Funding", _FILLER],
            record=_record("Moss cheese caves", [("Dun", "More")], "first-page", year=2017),
        ),
    }
    ids = {}
    async with HaikuRAG(root / "library.lancedb", library_config(root), create=True) as client:
        for key, spec in specs.items():
            record = spec.pop("record")
            path = root / f"{key}.pdf"
            pdf_factory.make_paper_pdf(path, pages=2, **spec)  # type: ignore[arg-type]
            outcome = await client.ingest_file(path, metadata=record)
            assert outcome.status == "ingested" and outcome.document is not None
            ids[key] = outcome.document.id
        yield client, Rows(**ids)


async def _fill(client: HaikuRAG, rows: list[str], columns: list, options: X.FillOptions) -> X.ExtractionTable:
    table = await X.create_table(client, "Records", columns, document_ids=rows)
    return await X.fill_table(client, table.id, options)


SEARCH = X.FillOptions(mode="search-only")


async def test_a_year_column_is_the_records_year_cited_on_the_first_page_that_names_it(rows_client) -> None:
    client, rows = rows_client
    table = await _fill(
        client, [rows.named], ["Year of publication", {"name": "Year", "type": "number",
        "question": "In which year was this document published?"}], SEARCH,
    )  # fmt: skip
    for column in table.columns:
        cell = table.cell(rows.named, column.id)
        assert cell is not None
        assert cell.value == "2019" and cell.status == "grounded" and cell.mode == "record"
        assert cell.status_label == "From the bibliographic record"
        assert any("bibliographic record" in r and "first page" in r for r in cell.reasons), cell.reasons
        # cited where the document names it: its header on page 1, not "2016" nor the reference
        assert [c.document_id for c in cell.citations] == [rows.named]
        assert cell.pages == [1] and "2019" in cell.quote and "Lantern Studies 12" in cell.quote
        assert cell.citations[0].boxes and all(b.page == 1 for b in cell.citations[0].boxes)
    assert table.cell(rows.named, table.columns[1].id).number == 2019


async def test_authors_venue_doi_and_title_columns_come_from_the_record(rows_client) -> None:
    client, rows = rows_client
    table = await _fill(client, [rows.named], ["Authors", "Journal", "DOI", "Title"], SEARCH)
    values = {c.name: table.cell(rows.named, c.id) for c in table.columns}
    assert values["Authors"].value == "Mara Quill, Tobias Fenwick" and "Quill" in values["Authors"].quote
    assert values["Journal"].value == "Journal of Lantern Studies"
    assert values["DOI"].value == "10.5555/lantern.2019.44" and "10.5555/lantern.2019.44" in values["DOI"].quote
    assert values["Title"].value == "Lantern otters at dusk"
    for cell in values.values():
        assert cell.mode == "record" and cell.status == "grounded" and cell.pages == [1], cell


async def test_a_model_mode_answers_a_year_column_from_the_record_too(rows_client) -> None:
    client, rows = rows_client
    asked: list[str] = []

    def wrong_year(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.append("asked")
        return ModelResponse(parts=[TextPart("2016 [1]")])  # a year its passages name, not its own

    options = X.FillOptions(mode="fallback", model=FunctionModel(wrong_year), supports_tools=False)
    table = await _fill(client, [rows.named], ["Year of publication"], options)
    cell = table.cell(rows.named, table.columns[0].id)
    assert cell.value == "2019" and cell.mode == "record" and cell.pages == [1]
    assert asked == []


async def test_a_year_named_only_in_the_reference_list_is_not_cited_and_the_cell_flagged(rows_client) -> None:
    client, rows = rows_client
    table = await _fill(client, [rows.in_references], ["Year of publication"], SEARCH)
    cell = table.cell(rows.in_references, table.columns[0].id)
    assert cell.value == "2014" and cell.mode == "record"
    assert cell.citations == [] and cell.quote == ""
    assert cell.status == "low_confidence"  # read from the PDF's metadata, named nowhere on its pages
    assert any("metadata" in r for r in cell.reasons) and any("first pages do not name it" in r for r in cell.reasons)


async def test_a_record_edited_by_hand_stands_without_a_citation(rows_client) -> None:
    client, rows = rows_client
    table = await _fill(client, [rows.edited], ["Year of publication"], SEARCH)
    cell = table.cell(rows.edited, table.columns[0].id)
    assert cell.value == "2021" and cell.status == "grounded" and cell.citations == []
    assert any("edited by hand" in r for r in cell.reasons)


async def test_without_the_field_or_asking_another_year_the_column_is_answered_as_any_other(rows_client) -> None:
    client, rows = rows_client
    table = await _fill(
        client, [rows.no_year, rows.named],
        ["Year of publication", {"name": "Year", "question": "Which year were the later visits made?"}], SEARCH,
    )  # fmt: skip
    no_year = table.cell(rows.no_year, table.columns[0].id)
    assert no_year.mode == "search-only" and no_year.status == "not_found"
    other_year = table.cell(rows.named, table.columns[1].id)
    assert other_year.mode == "search-only" and "2016" in other_year.value


async def test_a_search_only_cell_not_found_says_why(rows_client) -> None:
    client, rows = rows_client
    table = await _fill(client, [rows.heading_only, rows.edited], ["Sample size", "Funding"], SEARCH)
    sample, funding = table.columns
    # absent: no sentence of the document names the column's words
    absent = table.cell(rows.edited, sample.id)
    assert absent.status == "not_found" and absent.value == ""
    assert any("names neither “sample” nor “size”" in r for r in absent.reasons), absent.reasons
    # named, but only where nothing can be a value (a heading): not matched, and where
    named = table.cell(rows.heading_only, funding.id)
    assert named.status == "not_found" and named.value == ""
    assert any("“funding”" in r and "p. " in r and "no sentence" in r for r in named.reasons), named.reasons


@pytest.mark.parametrize(
    ("name", "question", "kind", "field"),
    [
        ("Year of publication", "", "text", "year"),
        ("Year", "In which year was this document published or dated?", "number", "year"),
        ("Authors", "Who wrote or issued this document: its authors or organisation?", "text", "authors"),
        ("DOI", "", "text", "doi"),
        ("Journal", "", "text", "venue"),
        ("Year", "Which year was the data collected?", "number", None),
        ("Method", "Which research design did the authors use?", "text", None),
        ("Sample size", "", "number", None),
        ("Authors", "", "yes-no", None),
    ],
)
def test_which_columns_ask_for_a_record_field(name: str, question: str, kind: str, field: str | None) -> None:
    from haiku.rag.extraction.record import record_field

    column = X.Column.of({"name": name, "question": question, "type": kind})
    assert record_field(column) == field
