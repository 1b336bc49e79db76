"""Tables as text for chunking: one line of ``row, column = value`` triplets per table row.

docling-core's triplet serializer (the upstream default for chunk text) writes a whole table as
one line and repeats a spanning cell, and empty cells as ``,  = .``, in every grid position it
covers. A 17-row table whose title cell spans all 25 columns became one 70,000-character line,
and the chunker's line splitter re-tokenises a line per split: 11 s for that page, and chunks of
repeated noise. Here each row is its own line, a cell spanning several columns is written once
per row, and empty cells are left out, so the chunker packs whole rows and splits linearly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument, TableItem
    from docling_core.types.doc.document import TableCell


def table_row_lines(table: TableItem, doc: DoclingDocument) -> list[str]:
    """The table's body rows as triplet lines; a header-only table gives one line of headers."""
    grid = table.data.grid
    if not grid or not grid[0]:
        return []
    texts = [[_cell_text(cell, doc) for cell in row] for row in grid]
    header_rows = _header_row_count(grid)
    column_names = [
        _joined_unique(texts[r][c] for r in range(header_rows)) for c in range(len(grid[0]))
    ]
    if header_rows == len(grid):
        line = ". ".join(name for name in column_names if name)
        return [line] if line else []
    lines = []
    label_column = 1 if len(grid[0]) > 1 else 0  # the first column names the row
    for row_index in range(header_rows, len(grid)):
        row, row_texts = grid[row_index], texts[row_index]
        row_label = row_texts[0] if label_column else ""
        triplets: list[str] = []
        seen: set[tuple[int, int]] = set()
        for col in range(label_column, len(row)):
            cell, value = row[col], row_texts[col]
            origin = (cell.start_row_offset_idx, cell.start_col_offset_idx)
            if not value or origin in seen or (label_column and value == row_label):
                continue
            seen.add(origin)
            triplets.append(_triplet(row_label, column_names[col], value))
        if not triplets and row_label:
            triplets.append(row_label)
        if triplets:
            lines.append(". ".join(triplets))
    return lines


def _header_row_count(grid: Sequence[Sequence[TableCell]]) -> int:
    """Leading rows whose filled cells are all column headers; row 0 if none is flagged."""
    count = 0
    for row in grid:
        filled = [cell for cell in row if cell.text.strip()]
        if not filled or not all(cell.column_header for cell in filled):
            break
        count += 1
    if count == 0 and len(grid) > 1:
        return 1
    return count


def _cell_text(cell: TableCell, doc: DoclingDocument) -> str:
    text = cell._get_text(doc=doc) if hasattr(cell, "_get_text") else cell.text
    return " ".join(text.split())


def _joined_unique(parts: Iterable[str]) -> str:
    """Stacked header texts for one column, a spanning header cell once."""
    seen: list[str] = []
    for part in parts:
        if part and part not in seen:
            seen.append(part)
    return " ".join(seen)


def _triplet(row_label: str, column_name: str, value: str) -> str:
    key = ", ".join(part for part in (row_label, column_name) if part)
    return f"{key} = {value}" if key else value
