"""``haiku-rag extract`` as a user runs it, over the ten-paper library (search mode: no model)."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import Path

import openpyxl
import pytest

from extraction.conftest import Library, open_client
from haiku.rag import extraction as X
from haiku.rag.cli import main


def _tables(library: Library, tmp_path: Path) -> list[X.ExtractionTable]:
    async def read() -> list[X.ExtractionTable]:
        async with open_client(library, tmp_path) as client:
            return [await X.load_table(client, t.id) for t in await X.list_tables(client)]

    return asyncio.run(read())


def _collection(library: Library, tmp_path: Path, ids: list[str]) -> None:
    async def make() -> None:
        async with open_client(library, tmp_path) as client:
            await client.create_collection("Trials", ids)

    asyncio.run(make())


def test_extract_a_collection_as_csv(library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = library.document_ids[:3]
    _collection(library, tmp_path, ids)
    code = main([
        "--db", str(library.db_path), "extract", "--collection", "Trials",
        "--column", "Participants", "--question", "Participants=How many participants were enrolled?",
        "--type", "participants=number:participants", "--column", "Dataset",
        "--question", "Dataset=Which dataset do the measurements come from?", "--mode", "search", "--csv",
    ])  # fmt: skip
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["Document"] for r in rows] == [library.paper(i).title for i in ids]
    for row_id, row in zip(ids, rows, strict=True):
        paper = library.paper(row_id)
        assert f"{paper.sample_size} participants" in row["Participants"]
        assert row["Participants — source"].endswith("p. 1")
        assert paper.dataset in row["Dataset — quote"] and row["Dataset — source"].endswith("p. 3")
        assert row["Dataset — status"] == "best passage (no model)"
    assert _tables(library, tmp_path) == []  # a one-off table is not kept


def test_a_kept_table_continues_and_adds_columns(
    library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = library.document_ids[:2]
    base = ["--db", str(library.db_path), "extract", "--documents", *ids, "--mode", "search", "--table", "Kept"]
    first = ["--column", "Blinded", "--type", "Blinded=yes-no", "--question", "Blinded=Were the assessors blinded?"]
    assert main([*base, *first, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "Kept" and len(data["rows"]) == 2
    assert "blind" in data["rows"][0]["cells"]["c1"]["quote"]
    (kept,) = _tables(library, tmp_path)
    before = dict(kept.cells)

    second = [*first, "--column", "Method", "--question", "Method=What study design was used?"]
    assert main([*base, *second, "--markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "| Document | Blinded | Method |" in markdown
    (kept,) = _tables(library, tmp_path)
    assert kept.filled == 4
    for key, cell in before.items():
        assert kept.cells[key] == cell  # the first column was not answered again


def test_a_bare_type_and_question_belong_to_the_column_before_them(
    library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    row = library.document_ids[3]
    code = main([
        "--db", str(library.db_path), "extract", "--documents", row, "--mode", "search", "--json",
        "--column", "Sample size", "--type", "number:participants",
        "--question", "How many participants were enrolled?",
        "--column", "Method", "--question", "What study design was used?",
    ])  # fmt: skip
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    size, method = data["columns"]
    assert (size["type"], size["unit"], size["question"]) == ("number", "participants", "How many participants were enrolled?")
    assert (method["type"], method["question"]) == ("text", "What study design was used?")
    cells = data["rows"][0]["cells"]
    assert cells["c1"]["number"] == library.paper(row).sample_size
    assert library.paper(row).method in cells["c2"]["value"]


def test_xlsx_to_a_file(library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "table.xlsx"
    code = main([
        "--db", str(library.db_path), "extract", "--documents", library.document_ids[0], "--column",
        "Method", "--question", "Method=What study design was used?", "--mode", "search", "--xlsx", "--out", str(out),
    ])  # fmt: skip
    assert code == 0 and "wrote" in capsys.readouterr().err
    sheet = openpyxl.load_workbook(out)["Table"]
    header = [c.value for c in sheet[1]]
    line = dict(zip(header, [c.value for c in sheet[2]], strict=True))
    assert library.paper(library.document_ids[0]).method in line["Method"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--column", "Method", "--xlsx"], "--xlsx writes a spreadsheet"),
        (["--column", "Method", "--type", "Method=date"], "the type is text, number"),
        (["--column", "Method", "--type", "Size=number"], "naming a --column ('Method')"),
        (["--column", "Kind", "--type", "Kind=category:one"], "at least two categories"),
        ([], "at least one --column"),
        (["--type", "number", "--column", "Size"], "names no column: put it after its --column"),
        (["--column", "Method", "--recompute"], "name it with --table"),
    ],
)
def test_bad_input_says_what_is_wrong(
    library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code = main(["--db", str(library.db_path), "extract", "--documents", library.document_ids[0], "--mode", "search", *extra])
    assert code == 1
    assert message in capsys.readouterr().err
    assert _tables(library, tmp_path) == []
