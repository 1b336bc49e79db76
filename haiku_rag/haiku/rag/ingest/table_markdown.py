"""A table as the model and the reader see it: a Markdown table whose header line names each
column (stacked header rows joined: "TEDs simple", "TEDs complex"), one line per body row.

Kept apart as parts (header lines, body row lines, and the boxes of each row's cells), so the
chunker can cut a long table by whole rows and give every piece the caption and the header,
and a citation of a piece highlights its rows' cells and the header, not the whole table.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from haiku.rag.ingest.records import Box

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument, TableItem
    from docling_core.types.doc.document import TableCell


@dataclass(slots=True)
class TableParts:
    header: list[str]  # the Markdown header line and its separator ([] for a table without rows)
    rows: list[str]  # one Markdown line per body row (empty rows left out)
    header_boxes: list[Box] = field(default_factory=list)  # the header cells' boxes
    row_boxes: list[list[Box]] = field(default_factory=list)  # each body row's cells' boxes

    @property
    def markdown(self) -> str:
        return "\n".join([*self.header, *self.rows])


def table_parts(table: TableItem, doc: DoclingDocument) -> TableParts:
    """The table's Markdown header and rows, and the boxes of their cells (cells with a
    ``bbox``; a converter that records none gives none, and callers fall back to the
    table's own box)."""
    grid = table.data.grid
    if not grid or not grid[0]:
        return TableParts([], [])
    page = table.prov[0].page_no if table.prov else 0
    texts = [[_cell_text(cell, doc) for cell in row] for row in grid]
    n_cols = len(grid[0])
    header_rows = header_row_count(grid)
    names = [
        _joined_unique(texts[r][c] for r in range(header_rows) if _names_column(grid[r][c], c, r, header_rows, n_cols))
        for c in range(n_cols)
    ]
    header = [_line(names), _separator(n_cols)] if header_rows else []
    header_boxes = _boxes([cell for row in grid[:header_rows] for cell in row], page)
    rows: list[str] = []
    row_boxes: list[list[Box]] = []
    for r in range(header_rows, len(grid)):
        values = [
            # a cell spanning columns is written once; one spanning rows, in each of its rows
            "" if grid[r][c].start_col_offset_idx < c else texts[r][c]
            for c in range(n_cols)
        ]
        if not any(values):
            continue
        rows.append(_line(values))
        row_boxes.append(_boxes(grid[r], page))
    if not header:
        header = [_line([""] * n_cols), _separator(n_cols)]
    return TableParts(header, rows, header_boxes, row_boxes)


def _names_column(cell: TableCell, col: int, row: int, header_rows: int, n_cols: int) -> bool:
    """Whether a header cell's text goes into column ``col``'s name: a cell spanning columns
    names each of them when header rows below split it ("TEDs" over "simple", "complex",
    "all"); a title spanning the whole width, or a spanning cell with nothing below, is
    written once, in its first column."""
    if cell.start_col_offset_idx >= col:
        return True
    whole_width = cell.start_col_offset_idx == 0 and cell.end_col_offset_idx >= n_cols
    return not whole_width and row + 1 < header_rows


def header_row_count(grid: Sequence[Sequence[TableCell]]) -> int:
    """Leading rows whose filled cells are all column headers; row 0 if none is flagged
    (and the table has more than one row)."""
    count = 0
    for row in grid:
        filled = [cell for cell in row if cell.text.strip()]
        if not filled or not all(cell.column_header for cell in filled):
            break
        count += 1
    if count == len(grid) and count > 1:
        return count  # a header-only table
    if count == 0 and len(grid) > 1:
        return 1
    return count


def _boxes(cells: Sequence[TableCell], page: int) -> list[Box]:
    boxes: list[Box] = []
    seen: set[tuple[int, int]] = set()
    for cell in cells:
        bbox = cell.bbox
        origin = (cell.start_row_offset_idx, cell.start_col_offset_idx)
        if bbox is None or origin in seen or not cell.text.strip() or page <= 0:
            continue
        seen.add(origin)
        if bbox.coord_origin.value != "TOPLEFT":
            continue  # our converters record top-left boxes; others are left to the table box
        boxes.append(Box(page, float(bbox.l), float(bbox.t), float(bbox.r), float(bbox.b)))
    return boxes


def _cell_text(cell: TableCell, doc: DoclingDocument) -> str:
    text = cell._get_text(doc=doc) if hasattr(cell, "_get_text") else cell.text
    return " ".join(text.split())


def _joined_unique(parts: object) -> str:
    seen: list[str] = []
    for part in parts:  # type: ignore[attr-defined]
        if part and part not in seen:
            seen.append(part)
    return " ".join(seen)


def _separator(n_cols: int) -> str:
    """The line under the header, as short as Markdown allows ("|-|-|"): "| --- |" cost
    four tokens a column, and a wide table's header and one row no longer fitted a chunk
    together (the NICS report's 25 columns: 123 + 101 + 65 tokens)."""
    return "|" + "|".join(["-"] * n_cols) + "|"


def _line(values: Sequence[str]) -> str:
    return "| " + " | ".join(value.replace("|", "\\|") for value in values) + " |"


# --- reading the Markdown back (hosts showing a passage) ---------------------------------------

_SEPARATOR_CELL = re.compile(r"^\s*:?-+:?\s*$")


@dataclass(slots=True)
class ShownTable:
    """A Markdown table read back from a passage: its column names and its body rows' cells."""

    header: list[str]
    rows: list[list[str]]


def _is_table_line(line: str) -> bool:
    line = line.strip()
    return len(line) >= 2 and line.startswith("|") and line.endswith("|") and not line.endswith("\\|")


def _cells(line: str) -> list[str]:
    inner = line.strip()[1:-1]
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", inner)]


def _is_separator(line: str) -> bool:
    return _is_table_line(line) and all(_SEPARATOR_CELL.match(cell) for cell in _cells(line))


def passage_blocks(text: str) -> list[str | ShownTable]:
    """``text`` cut into its prose (strings, lines kept) and its Markdown tables (a header line,
    a separator line such as ``|-|-|``, then one line per row; rows after the first table
    line without a separator are shown as rows too, under empty column names, and so is one
    such line of three cells or more)."""
    lines = text.split("\n")
    blocks: list[str | ShownTable] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        if _is_table_line(lines[i]) and not _is_separator(lines[i]):
            j = i
            while j < len(lines) and _is_table_line(lines[j]):
                j += 1
            run = lines[i:j]
            if len(run) >= 2 and _is_separator(run[1]):
                header, body = _cells(run[0]), [_cells(line) for line in run[2:] if not _is_separator(line)]
            elif len(run) >= 2 or len(_cells(run[0])) >= 3:
                # rows without their header (a table chunk cut after it), or one such row:
                # three cells or more are a table's row, never prose to show with its pipes
                body = [_cells(line) for line in run if not _is_separator(line)]
                header = [""] * max(len(r) for r in body)
            else:
                prose.append(lines[i])
                i += 1
                continue
            if prose:
                blocks.append("\n".join(prose))
                prose = []
            width = max([len(header), *(len(r) for r in body)])
            blocks.append(
                ShownTable(
                    header + [""] * (width - len(header)), [r + [""] * (width - len(r)) for r in body]
                )
            )
            i = j
            continue
        if not _is_separator(lines[i]):  # a stray separator (a table cut before it) shows nothing
            prose.append(lines[i])
        i += 1
    if prose:
        blocks.append("\n".join(prose))
    return blocks


def row_as_text(header: Sequence[str], row: Sequence[str]) -> str:
    """One body row as words: "Language: OTSL; TEDs all: 0.96" (empty cells left out)."""
    return "; ".join(f"{name}: {value}" if name else value for name, value in zip(header, row, strict=False) if value)


def tables_as_text(text: str) -> str:
    """``text`` with each Markdown table written as words, a line per row ("• header: value;
    …"; a table with no body row, its column names): for a one-line snippet, never pipes."""
    parts: list[str] = []
    for block in passage_blocks(text):
        if isinstance(block, str):
            parts.append(block)
        elif block.rows:
            parts.extend("• " + row_as_text(block.header, row) for row in block.rows)
        else:
            parts.append("; ".join(name for name in block.header if name))
    return "\n".join(parts)
