"""Search-only cells over a financial table take the row whose label answers the column: all of
the question's words in the label, no qualifier of its own ("Deferred revenue" is not the
revenue, "Net income attributable to noncontrolling interests" is not the net income), the
question's phrase word for word, whichever row comes first in the table or sits in the chunk
the search highlighted."""

from __future__ import annotations

from pathlib import Path

import pdf_factory
import pymupdf
import pytest

import haiku.rag.extraction as X
from extraction.papers import library_config
from extraction.test_search_only_values import _search_cell
from haiku.rag.client import HaikuRAG
from haiku.rag.extraction.values import label_fit, names_another_line, row_label

# a press release's "financial highlights": balance-sheet and income-statement lines in one
# table, in the order such tables print them (the qualified lines above the totals)
HIGHLIGHTS = [
    ["(in millions)", "2023", "2022"],
    ["Deferred revenue", "1,210", "1,105"],
    ["Total revenue", "24,578", "21,455"],
    ["Cost of revenue", "14,112", "12,870"],
    ["Operating income", "3,910", "3,402"],
    ["Net income attributable to noncontrolling interests", "52", "47"],
    ["Net income", "2,871", "2,545"],
    ["Capital expenditures, gross", "1,340", "1,188"],
    ["Capital expenditures", "1,296", "1,150"],
]


def _statement_pdf(path: Path) -> Path:
    layout = pdf_factory.PdfLayout(path=path, page_count=1, page_size=pdf_factory.A4)
    doc = pymupdf.open()
    page = doc.new_page(width=pdf_factory.A4[0], height=pdf_factory.A4[1])
    w = pdf_factory._PageWriter(layout, page, 1)
    w.block("title", "title", ["Harrow Instruments Reports Fiscal 2023 Results"], size=20.0, bold=True, space_after=12)
    w.paragraph(
        "p_intro",
        "Harrow Instruments today reported results for the fiscal year ended December 31, 2023. "
        "The table below summarises the year's financial highlights, with the prior year for comparison.",
    )
    size = 10.0
    columns = pdf_factory._columns_for(HIGHLIGHTS, pdf_factory.MARGIN, size, 24.0)
    edges = [c[0] - 6 for c in columns] + [columns[-1][1] + 6]
    row_height = size * 1.6
    for r, texts in enumerate(HIGHLIGHTS):
        top = w.y
        pdf_factory._draw_cells(page, texts, columns, top + 0.45 * size, size, bold=r == 0)
        for c in range(len(columns)):
            page.draw_rect(pymupdf.Rect(edges[c], top, edges[c + 1], top + row_height), color=(0, 0, 0), width=0.6)
        w.y = top + row_height
    w.y += 14
    w.paragraph(
        "p_after",
        "Management will discuss these results on a conference call with analysts and investors "
        "on the morning after this release.",
    )
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="module")
def statement_cells(tmp_path_factory: pytest.TempPathFactory) -> dict[str, X.Cell]:
    import asyncio

    root = tmp_path_factory.mktemp("row-choice")
    pdf = _statement_pdf(root / "harrow.pdf")
    columns = [
        {"name": "Revenue", "question": "What was the company's revenue in 2023?", "type": "number"},
        {"name": "Net income", "type": "number"},
        {"name": "Capex", "question": "What were capital expenditures in fiscal 2023?", "type": "number"},
    ]

    async def fill() -> dict[str, X.Cell]:
        async with HaikuRAG(root / "library.lancedb", library_config(root), create=True) as client:
            outcome = await client.ingest_file(pdf)
            assert outcome.status == "ingested", outcome.reason
            doc = outcome.document.id
            table = await X.create_table(client, "Harrow", columns, document_ids=[doc])
            filled = await X.fill_table(client, table.id, X.FillOptions(mode="search-only"))
            return {c.name: filled.cell(doc, c.id) for c in filled.columns}

    return asyncio.run(fill())


def _label(cell: X.Cell | None) -> str:
    assert cell is not None and cell.status == "grounded", cell
    return row_label(cell.value) if cell.value.startswith("• ") else cell.value


def test_a_revenue_column_takes_total_revenue_not_the_deferred_revenue_printed_above_it(statement_cells) -> None:
    cell = statement_cells["Revenue"]
    assert _label(cell) == "Total revenue" and "24,578" in cell.value, cell.value if cell else None


def test_a_net_income_column_takes_net_income_not_the_noncontrolling_interests_line(statement_cells) -> None:
    cell = statement_cells["Net income"]
    assert _label(cell) == "Net income" and "2,871" in cell.value, cell.value if cell else None


def test_the_label_that_is_the_questions_phrase_comes_before_a_longer_one(statement_cells) -> None:
    # "Capital expenditures, gross" holds the question's words too; only "Capital
    # expenditures" is its phrase word for word
    cell = statement_cells["Capex"]
    assert _label(cell) == "Capital expenditures" and "1,296" in cell.value, cell.value if cell else None


def test_the_row_answering_the_column_wins_over_a_qualified_row_in_the_highlighted_chunk() -> None:
    # the search highlighted the balance sheet's chunk (deferred revenue); the income
    # statement's total revenue is in the context the expansion added around it
    balance = "| ($ in millions) | 2023 | 2022 |\n|---|---|---|\n| Deferred revenue | 1,210 | 1,105 |\n| Total liabilities | 9,870 | 9,102 |\n"
    income = "| ($ in millions) | 2023 | 2022 |\n|---|---|---|\n| Total revenue | 24,578 | 21,455 |\n| Cost of revenue | 14,112 | 12,870 |\n"
    cell = _search_cell(
        X.Column(name="Revenue", question="What was the company's revenue in 2023?", type="number"),
        (f"{balance}\n{income}", balance, ["Consolidated Balance Sheets"]),
    )
    assert cell.status == "grounded" and row_label(cell.value) == "Total revenue", cell.value


@pytest.mark.parametrize(
    ("question", "better", "worse"),
    [
        ("What was the total revenue?", "Total revenue", "Total deferred revenue"),
        ("Net income", "Net income", "Net income attributable to noncontrolling interests"),
        ("Net income", "Net income", "Operating income"),
        ("What was the company's FY2019 revenue?", "Total revenue", "Deferred revenue"),
        ("What were capital expenditures?", "Capital expenditures", "Capital expenditures, gross"),
    ],
)
def test_label_fit_orders_labels(question: str, better: str, worse: str) -> None:
    assert label_fit(question, better) > label_fit(question, worse)


def test_a_row_naming_another_line_is_no_value_the_cell_is_not_found() -> None:
    # the passages hold the balance sheet only: its deferred revenue is not the total revenue
    balance = "| ($ in millions) | 2023 | 2022 |\n|---|---|---|\n| Deferred revenue | 1,210 | 1,105 |\n| Total liabilities | 9,870 | 9,102 |\n"
    cell = _search_cell(X.Column(name="Total revenue", type="number"), (balance, balance, ["Consolidated Balance Sheets"]))
    assert cell.status == "not_found" and not cell.value, cell.value


@pytest.mark.parametrize(
    ("question", "label", "another"),
    [
        ("Total revenue", "Deferred revenue", True),
        ("Net income", "Operating income", True),
        ("Interest income", "Net income", True),
        ("Total revenue", "Revenues", False),
        ("What was the company's revenue in 2023?", "Total revenue", False),
        ("Net income", "Net income attributable to Costco", False),
    ],
)
def test_names_another_line(question: str, label: str, another: bool) -> None:
    assert names_another_line(question, label) is another
