"""A table that runs on over a page break without repeating its header (a statement, a
register of notices) gets its header and caption back on the next page.

Each page's tables are found on their own, so the part on the next page would take its first
body row for its header, and its chunks would carry neither the real header nor the caption.
A table continues the one before it when it is the first body item of its page, the other is
the last body item of the page before, both have the same number of columns, and its first
row reads like its second (the same cells filled, numbers where numbers are) rather than like
a header; a first row that repeats the header's text is the header, repeated, and is kept.
The continuation gets copies of the header rows (without boxes: they are printed on the page
before) and the same captions.
"""

from __future__ import annotations

import re

from docling_core.types.doc import ContentLayer, DocItem, DoclingDocument, TableCell, TableItem

_NUMBER = re.compile(r"^[\s$€£¥(+\-–—]*[\d.,]+[)%\s]*$")


def join_continued_tables(doc: DoclingDocument) -> None:
    """Give each continued table its header and captions, in place."""
    if len(doc.tables) < 2:
        return
    body = _top_level(doc)
    for before, item in zip(body, body[1:], strict=False):
        if not (isinstance(before, TableItem) and isinstance(item, TableItem)):
            continue  # (a list between them is None: not adjacent)
        if item.prov[0].page_no != before.prov[-1].page_no + 1:
            continue
        if _continues(before, item):
            _give_header(before, item)


def _top_level(doc: DoclingDocument) -> list[DocItem | None]:
    """The body's items in order, page furniture left out; a group (a list) as None. The
    converter puts every item at the top level but list items, so this is the reading order
    without walking docling-core's tree (``iterate_items`` cost more than the joining)."""
    items: list[DocItem | None] = []
    for ref in doc.body.children:
        kind, _, index = ref.cref.rpartition("/")
        if kind == "#/tables":
            items.append(doc.tables[int(index)])
        elif kind == "#/texts":
            text = doc.texts[int(index)]
            if text.content_layer != ContentLayer.FURNITURE and text.prov:
                items.append(text)
        else:
            items.append(None)  # a list, a picture: content between two tables
    return items


def _pattern(row: list[TableCell]) -> tuple[str, ...]:
    return tuple(
        "" if not cell.text.strip() else "n" if _NUMBER.match(cell.text) else "t" for cell in row
    )


def _header_rows(table: TableItem) -> int:
    count = 0
    for row in table.data.grid:
        filled = [cell for cell in row if cell.text.strip()]
        if filled and all(cell.column_header for cell in filled):
            count += 1
        else:
            break
    return count


def _continues(before: TableItem, table: TableItem) -> bool:
    grid, earlier = table.data.grid, before.data.grid
    if not grid or len(grid) < 2 or table.data.num_cols != before.data.num_cols:
        return False
    header = _header_rows(before)
    if header == 0 or header >= len(earlier):
        return False
    first = [cell.text.strip() for cell in grid[0]]
    if first in ([cell.text.strip() for cell in row] for row in earlier[:header]):
        return False  # the header, repeated on this page
    return _pattern(grid[0]) == _pattern(grid[1]) and _pattern(grid[0]) == _pattern(earlier[header])


def _give_header(before: TableItem, table: TableItem) -> None:
    header = _header_rows(before)
    shift = header
    cells = [
        cell.model_copy(update={"bbox": None})
        for cell in before.data.table_cells
        if cell.start_row_offset_idx < header
    ]
    for cell in table.data.table_cells:
        cells.append(
            cell.model_copy(
                update={
                    "start_row_offset_idx": cell.start_row_offset_idx + shift,
                    "end_row_offset_idx": cell.end_row_offset_idx + shift,
                    "column_header": False,
                }
            )
        )
    table.data = table.data.model_copy(update={"num_rows": table.data.num_rows + shift, "table_cells": cells})
    known = {ref.cref for ref in table.captions}
    table.captions.extend(ref for ref in before.captions if ref.cref not in known)
