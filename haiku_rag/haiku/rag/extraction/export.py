"""Exporting a table: CSV, XLSX, Markdown, JSON, and the BibTeX of its rows.

One line per document: the document, its author–year reference, then for each column its
value, the supporting quote, where it is ("Author, year, p. N") and the cell's status, so a
researcher can paste it into a review protocol and still check every cell. Cell text comes
from documents: a value starting like a spreadsheet formula (``=``, ``+``, ``@``, ``-`` before a
letter) stays text: quoted with ``'`` in CSV, stored as a text cell in XLSX.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from haiku.rag.extraction.models import Cell, ExtractionTable
from haiku.rag.files import write_atomic

if TYPE_CHECKING:
    from haiku.rag.bibliography import Bibliographic
    from haiku.rag.client import HaikuRAG

ExportFormat = Literal["csv", "xlsx", "markdown", "json", "bibtex"]
EXPORT_FORMATS: tuple[str, ...] = ("csv", "xlsx", "markdown", "json", "bibtex")
SUFFIXES = {"csv": ".csv", "xlsx": ".xlsx", "markdown": ".md", "json": ".json", "bibtex": ".bib"}

STATUS_WORDS = {
    "grounded": "grounded",
    "not_found": "not found",
    "low_confidence": "low confidence",
    "edited": "edited",
}


@dataclass(frozen=True)
class Row:
    """A row as exported: its document's name and record, and its cells by column id."""

    document_id: str
    name: str
    record: Bibliographic | None
    cells: dict[str, Cell | None]
    removed: bool = False  # its document was removed from the library (its cells are kept)


REMOVED = "removed from the library"


def source_label(record: Bibliographic | None, name: str, cell: Cell | None) -> str:
    """"Vaswani et al., 2017, p. 6": the row's author and year with the cell's pages."""
    from haiku.rag.bibliography import author_year_citation

    pages = cell.pages if cell is not None else []
    labels = cell.page_labels if cell is not None else None  # the pages as printed
    return author_year_citation(record, pages, fallback_title=name, parentheses=False, labels=labels)


def status_word(cell: Cell | None) -> str:
    if cell is None:
        return "not filled"
    if cell.mode == "search-only" and cell.status == "grounded":
        return "best passage (no model)"
    if cell.mode == "record" and cell.status == "grounded":
        return "from the bibliographic record"
    return STATUS_WORDS[cell.status]


async def export_rows(client: HaikuRAG, table: ExtractionTable) -> list[Row]:
    from haiku.rag.bibliography import bibliographic_of

    rows = []
    for document_id in table.document_ids:
        document = await client.get_document(document_id)
        record = await bibliographic_of(client, document)
        rows.append(
            Row(
                document_id, document.display_name, record,
                {c.id: table.cell(document_id, c.id) for c in table.columns},
            )
        )  # fmt: skip
    for document_id in table.removed_document_ids:  # kept, with their cells, and said so
        cells = {c.id: table.cell(document_id, c.id) for c in table.columns}
        name = f"{table.removed_title(document_id)} ({REMOVED})"
        rows.append(Row(document_id, name, None, cells, removed=True))
    return rows


def header(table: ExtractionTable) -> list[str]:
    names = ["Document", "Reference"]
    for column in table.columns:
        names += [column.name, f"{column.name} — quote", f"{column.name} — source", f"{column.name} — status"]
    return names


def lines(table: ExtractionTable, rows: list[Row]) -> list[list[str]]:
    out = []
    for row in rows:
        line = [row.name, source_label(row.record, row.name, None)]
        for column in table.columns:
            cell = row.cells.get(column.id)
            line += [
                cell.value if cell else "",
                cell.quote if cell else "",
                source_label(row.record, row.name, cell) if cell and cell.citations else "",
                status_word(cell),
            ]
        out.append(line)
    return out


def as_text(value: str) -> str:
    """A cell's text made safe for a spreadsheet: a leading formula character is quoted."""
    if value[:1] in ("=", "+", "@", "\t", "\r") or (value[:1] == "-" and not value[1:2].isdigit()):
        return "'" + value
    return value


def to_csv(table: ExtractionTable, rows: list[Row]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header(table))
    for line in lines(table, rows):
        writer.writerow([as_text(v) for v in line])
    return buffer.getvalue()


def to_xlsx(table: ExtractionTable, rows: list[Row]) -> bytes:
    import openpyxl
    from openpyxl.styles import Font

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Table"
    sheet.append(header(table))
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    for line in lines(table, rows):
        sheet.append(line)
    for row in sheet.iter_rows(min_row=2):
        for cell in row:
            cell.data_type = "s"  # document text is stored as text, never as a formula
    about = book.create_sheet("Columns")
    about.append(["Column", "Question", "Type", "Unit", "Categories"])
    for column in table.columns:
        about.append(
            [column.name, column.asked, column.type, column.unit or "", "; ".join(column.categories)]
        )
    for row in about.iter_rows(min_row=2):
        for cell in row:
            cell.data_type = "s"
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def _md(text: str) -> str:
    return " ".join(text.split()).replace("\\", "\\\\").replace("|", "\\|")


def to_markdown(table: ExtractionTable, rows: list[Row]) -> str:
    out = [f"# {_md(table.name)}", ""]
    out.append("| Document | " + " | ".join(_md(c.name) for c in table.columns) + " |")
    out.append("|---" * (len(table.columns) + 1) + "|")
    for row in rows:
        cells = []
        for column in table.columns:
            cell = row.cells.get(column.id)
            if cell is None:
                cells.append("")
                continue
            text = _md(cell.value) or f"*{status_word(cell)}*"
            if cell.citations:
                text += f" ({_md(source_label(row.record, row.name, cell))})"
            if cell.status in ("low_confidence", "edited") or cell.mode in ("search-only", "record"):
                text += f" *[{status_word(cell)}]*"
            cells.append(text)
        out.append(f"| {_md(row.name)} | " + " | ".join(cells) + " |")
    out += ["", "## Quotes", ""]
    for row in rows:
        quoted = [(c, row.cells.get(c.id)) for c in table.columns]
        quoted = [(c, cell) for c, cell in quoted if cell is not None and cell.quote]
        if not quoted:
            continue
        out.append(f"### {_md(row.name)}")
        out.append("")
        for column, cell in quoted:
            assert cell is not None
            out.append(f"- **{_md(column.name)}**: “{_md(cell.quote)}” ({_md(source_label(row.record, row.name, cell))})")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def to_json(table: ExtractionTable, rows: list[Row]) -> str:
    data: dict[str, Any] = table.model_dump(mode="json")
    data["rows"] = [
        {
            "document_id": row.document_id,
            "document": row.name,
            "removed": row.removed,
            "reference": source_label(row.record, row.name, None),
            "cells": {
                cid: None if cell is None else {
                    **cell.model_dump(mode="json", include={"value", "answer", "number", "unit", "quote", "status", "mode", "reasons", "edited_from"}),
                    "pages": cell.pages,
                    "source": source_label(row.record, row.name, cell) if cell.citations else "",
                    "chunk_ids": [c.chunk_id for c in cell.citations],
                }
                for cid, cell in row.cells.items()
            },
        }
        for row in rows
    ]  # fmt: skip
    return json.dumps(data, indent=2, ensure_ascii=False)


def to_bibtex(rows: list[Row]) -> str:
    from haiku.rag.bibliography import Bibliographic
    from haiku.rag.bibliography import to_bibtex as bibtex

    return bibtex([row.record or Bibliographic(title=row.name) for row in rows if not row.removed])


async def export_table(
    client: HaikuRAG,
    table: ExtractionTable | str,
    format: ExportFormat,
    path: str | os.PathLike[str] | None = None,
) -> str | bytes:
    """The table in ``format`` (XLSX as bytes, the others as text), also written to ``path``."""
    from haiku.rag.extraction.errors import ExtractionError
    from haiku.rag.extraction.tables import load_table

    if format not in EXPORT_FORMATS:
        raise ExtractionError(f"export format must be one of {', '.join(EXPORT_FORMATS)}, not {format!r}")
    loaded = table if isinstance(table, ExtractionTable) and table.cells else await load_table(
        client, table.id if isinstance(table, ExtractionTable) else table
    )
    rows = await export_rows(client, loaded)
    data: str | bytes
    if format == "csv":
        data = to_csv(loaded, rows)
    elif format == "xlsx":
        data = to_xlsx(loaded, rows)
    elif format == "markdown":
        data = to_markdown(loaded, rows)
    elif format == "json":
        data = to_json(loaded, rows)
    else:
        data = to_bibtex(rows)
    if path is not None:
        write_atomic(path, data.encode("utf-8") if isinstance(data, str) else data)
    return data
