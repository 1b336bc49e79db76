"""Exports hold, per cell, the value, the quote and "Author, year, p. N"; read back with the
standard library's csv and with openpyxl."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import openpyxl

from extraction.conftest import COLUMNS, Library
from extraction.scripted import Extractor
from haiku.rag import extraction as X
from haiku.rag.bibliography import Bibliographic, Creator
from haiku.rag.client import HaikuRAG


async def _table(client: HaikuRAG, library: Library) -> X.ExtractionTable:
    rows = library.document_ids[:3]
    for n, row in enumerate(rows):
        record = Bibliographic(
            title=library.paper(row).title, year=2015 + n, source="user",
            creators=[Creator(family=f"Author{chr(65 + n)}", given="Ada", role="author")],
        )  # fmt: skip
        await client.update_bibliographic(row, record)
    table = await X.create_table(client, "Review", COLUMNS, document_ids=rows)
    extractor = Extractor()
    await X.fill_table(client, table.id, X.FillOptions(mode="fallback", model=extractor.fallback_model))
    await X.set_value(client, table.id, rows[2], "c4", "=HYPERLINK(\"http://x\")")
    return await X.load_table(client, table.id)


def _expected(library: Library, row: str, n: int) -> dict[str, str]:
    paper = library.paper(row)
    return {
        "Document": paper.title,
        "Reference": f"Author{chr(65 + n)}, {2015 + n}",
        "Sample size": f"{paper.sample_size} participants",
        "Sample size — source": f"Author{chr(65 + n)}, {2015 + n}, p. 1",
        "Sample size — status": "grounded",
        "Dataset — source": f"Author{chr(65 + n)}, {2015 + n}, p. 3",
    }


async def test_csv_round_trip(client: HaikuRAG, library: Library, tmp_path: Path) -> None:
    table = await _table(client, library)
    path = tmp_path / "out" / "review.csv"
    text = await X.export_table(client, table, "csv", path)
    assert isinstance(text, str) and path.read_bytes().decode("utf-8") == text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 3
    for n, (row_id, row) in enumerate(zip(table.document_ids, rows, strict=True)):
        for key, value in _expected(library, row_id, n).items():
            assert row[key] == value, key
        assert str(library.paper(row_id).sample_size) in row["Sample size — quote"]
        assert row["Blinded"] in ("yes", "no")
    assert rows[2]["Dataset"] == "'=HYPERLINK(\"http://x\")"  # stays text in a spreadsheet
    assert rows[2]["Dataset — status"] == "edited"


async def test_xlsx_round_trip(client: HaikuRAG, library: Library, tmp_path: Path) -> None:
    table = await _table(client, library)
    data = await X.export_table(client, table, "xlsx", tmp_path / "review.xlsx")
    assert isinstance(data, bytes)
    book = openpyxl.load_workbook(tmp_path / "review.xlsx")
    sheet = book["Table"]
    values = [[c.value for c in row] for row in sheet.iter_rows()]
    header, body = values[0], values[1:]
    assert len(body) == 3
    for n, (row_id, line) in enumerate(zip(table.document_ids, body, strict=True)):
        row = dict(zip(header, line, strict=True))
        for key, value in _expected(library, row_id, n).items():
            assert row[key] == value, key
    edited = dict(zip(header, body[2], strict=True))["Dataset"]
    assert sheet.cell(row=4, column=header.index("Dataset") + 1).data_type == "s"
    assert edited == "=HYPERLINK(\"http://x\")"  # the text itself, in a text cell
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert "<f>" not in archive.read("xl/worksheets/sheet1.xml").decode()  # no formula
    assert [c.value for c in book["Columns"][3]][:3] == ["Method", "What study design was used?", "text"]


async def test_markdown_json_and_bibtex(client: HaikuRAG, library: Library) -> None:
    table = await _table(client, library)
    markdown = await X.export_table(client, table, "markdown")
    assert isinstance(markdown, str)
    paper = library.paper(table.document_ids[0])
    assert f"| {paper.title} | {paper.sample_size} participants (AuthorA, 2015, p. 1) |" in markdown
    assert "## Quotes" in markdown and f"“We enrolled {paper.sample_size} participants" in markdown
    data = json.loads(str(await X.export_table(client, table, "json")))
    first = data["rows"][0]["cells"]["c1"]
    assert first["pages"] == [1] and first["source"] == "AuthorA, 2015, p. 1" and first["chunk_ids"]
    bibtex = await X.export_table(client, table, "bibtex")
    assert isinstance(bibtex, str) and bibtex.count("@") == 3 and "year = {2016}" in bibtex
