"""Tables as first-class evidence (issue 29, item 1), on generated PDFs of each table kind:
ruled, unruled, spanning headers (the OTSL results table, booktabs rules), a landscape table
on a rotated page, a 10-K cash-flow statement (labels far from their amounts, "$" apart), and
a table that is only pixels (a scan, read by OCR).

For each kind, through the real converter and chunker: every body row is one Markdown table
line in one chunk; that chunk carries the caption and the column header, under the table's
own heading (not the next one); and the chunk's boxes are its rows' cells and the header,
not the whole table.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # must precede docling-core/transformers imports

from pathlib import Path

import pytest
from pdf_factory import (
    WRAPPED_HEADER,
    DrawnTable,
    make_group_header_pdf,
    make_table_pdf,
    make_wrapped_cells_pdf,
)

from haiku.rag.ingest.chunker import chunk_document
from haiku.rag.ingest.items import ItemBoxes, ItemTexts
from haiku.rag.ingest.pdf import convert_pdf
from haiku.rag.ingest.records import Box, ChunkRecord

HEADINGS = {
    "ruled": ["5 Experiments"],
    "ruled_groups": ["5 Experiments"],
    "unruled": ["5 Experiments"],
    "spanning": ["5 Experiments"],
    "rotated": ["Councillors' expenditure 2023"],
    "rotated_ruled": ["Councillors' expenditure 2023"],
    "statement": ["Consolidated Statement of Cash Flows"],
    "in_column": ["4 Experimental Setup"],
}


def _chunks(path: Path) -> tuple[list[ChunkRecord], object]:
    conversion = convert_pdf(path.read_bytes(), source=path.name)
    document = conversion.document
    return chunk_document(document, boxes=ItemBoxes(document, conversion.item_boxes)), conversion


def _markdown_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _overlaps(box: Box, rect: tuple[float, float, float, float]) -> bool:
    return min(box.x1, rect[2]) - max(box.x0, rect[0]) > 1 and min(box.y1, rect[3]) - max(box.y0, rect[1]) > 1


def _highlighted(
    rect: tuple[float, float, float, float], cells: int, boxes: list[Box], page: int = 1
) -> bool:
    """Whether ``boxes`` highlight each of the row's ``cells`` (a box per cell at least)
    from the row's first cell to its last."""
    on_row = [b for b in boxes if b.page == page and _overlaps(b, rect)]
    if len(on_row) < cells:
        return False
    return min(b.x0 for b in on_row) <= rect[0] + 2 and max(b.x1 for b in on_row) >= rect[2] - 2


def _check_rows(chunks: list[ChunkRecord], table: DrawnTable, headings: list[str]) -> None:
    table_chunks = [c for c in chunks if "table" in c.labels]
    assert len(table_chunks) >= 1
    for index, row in enumerate(table.rows):
        line = _markdown_row(row)
        holders = [c for c in table_chunks if line in c.text.splitlines()]
        assert len(holders) == 1, f"row {row} is not one Markdown line of exactly one chunk"
        (chunk,) = holders
        lines = chunk.text.splitlines()
        header_line = next(i for i, text in enumerate(lines) if text.startswith("|-"))
        assert header_line < lines.index(line)
        for word in table.header:
            assert word in lines[header_line - 1], f"header {word!r} missing above row {row}"
        if table.caption:
            caption_head = table.caption.split(". ")[0]
            assert chunk.text.startswith(caption_head), "the chunk does not start with the caption"
        assert chunk.headings == headings
        # the highlight: this row's cells and the header, not the other rows
        page = table.page_of(index)
        assert _highlighted(table.row_rects[index], sum(map(bool, row)), chunk.boxes, page)
        assert table.header_rect is not None
        if page == table.page:  # the header is printed on the table's first page only
            assert _highlighted(table.header_rect, 2, chunk.boxes, page)
        assert chunk.page_numbers == sorted({table.page_of(i) for i, r in enumerate(table.rows) if _markdown_row(r) in lines})
        held = {i for i, other in enumerate(table.rows) if _markdown_row(other) in lines}
        for other_index, rect in enumerate(table.row_rects):
            if other_index not in held:
                assert not any(
                    b.page == table.page_of(other_index) and _overlaps(b, rect) for b in chunk.boxes
                ), f"chunk of row {index} highlights row {other_index}, which it does not hold"
    # every chunk of the table holds whole rows only
    for chunk in table_chunks:
        for text in chunk.text.splitlines()[1 if table.caption else 0 :]:
            assert (text.startswith("| ") and text.endswith(" |")) or set(text) <= set("|-")


@pytest.mark.parametrize(
    "kind",
    ["ruled", "ruled_groups", "unruled", "spanning", "rotated", "rotated_ruled", "statement", "in_column"],
)
def test_each_row_is_one_markdown_line_with_the_caption_header_and_its_own_boxes(tmp_path, kind):
    layout, table = make_table_pdf(tmp_path / f"{kind}.pdf", kind)
    chunks, _ = _chunks(layout.path)
    _check_rows(chunks, table, HEADINGS[kind])
    if kind in ("ruled", "unruled"):
        assert sum("table" in c.labels for c in chunks) >= 2  # long enough to be cut by rows


def test_a_table_running_on_over_a_page_break_keeps_its_caption_and_header(tmp_path):
    layout, table = make_table_pdf(tmp_path / "long.pdf", "unruled", rows=60)
    assert layout.page_count == 2 and table.page_of(59) == 2
    chunks, conversion = _chunks(layout.path)
    _check_rows(chunks, table, HEADINGS["unruled"])
    assert any(c.page_numbers == [2] for c in chunks if "table" in c.labels)


@pytest.mark.parametrize("kind", ["ruled", "unruled"])
def test_a_caption_whose_label_is_printed_in_pieces_goes_with_its_table(tmp_path, kind):
    """"Table" and "2:" in bold spans of their own, spread apart, then the caption's text
    (as on the OTSL paper's own page): still the table's caption, in every chunk of it."""
    layout, table = make_table_pdf(tmp_path / "pieces.pdf", kind, caption_in_pieces=True)
    chunks, _ = _chunks(layout.path)
    _check_rows(chunks, table, HEADINGS[kind])
    table_chunks = [c for c in chunks if "table" in c.labels]
    assert len(table_chunks) >= 2
    assert all(c.text.startswith("Table 2: Shipments") for c in table_chunks)
    assert not any(table.caption in c.text for c in chunks if "table" not in c.labels)


@pytest.mark.parametrize("ruled", [True, False])
def test_a_cell_wrapped_onto_two_lines_is_one_cell_of_one_row(tmp_path, ruled):
    """A cell printed on two lines stays one cell of its row: in a ruled grid whatever sits
    inside one ruled cell (one-line cells centred beside it, a line struck out, the header's
    inset shading), in an unruled table the lines under a row's top-aligned cells."""
    layout, rows = make_wrapped_cells_pdf(tmp_path / "wrapped.pdf", ruled=ruled)
    chunks, _ = _chunks(layout.path)
    (chunk,) = [c for c in chunks if "table" in c.labels]
    lines = chunk.text.splitlines()
    header = lines.index(_markdown_row(WRAPPED_HEADER))
    assert lines[header + 2 :] == [_markdown_row(row) for row in rows]


def test_a_group_header_names_the_sub_columns_of_its_ruled_cell(tmp_path):
    """ "Pre-Pawn" centred over its three sub-columns between the vertical rules of its
    group (the NICS report): it names those three, not the single column before them
    ("Admin") nor the next group's first column, though it is as centred over those five."""
    layout, names, rows = make_group_header_pdf(tmp_path / "groups.pdf", ruled=True)
    chunks, _ = _chunks(layout.path)
    table_chunks = [c for c in chunks if "table" in c.labels]
    assert table_chunks
    for chunk in table_chunks:
        lines = chunk.text.splitlines()
        header_line = next(i for i, text in enumerate(lines) if text.startswith("|-"))
        assert lines[header_line - 1] == _markdown_row(names)
    held = [line for c in table_chunks for line in c.text.splitlines()]
    for row in rows:
        assert _markdown_row(row) in held


def test_spanning_headers_name_every_column_they_cover(tmp_path):
    layout, _ = make_table_pdf(tmp_path / "otsl.pdf", "spanning")
    chunks, conversion = _chunks(layout.path)
    (table,) = conversion.document.tables
    header_line = next(c for c in chunks if "table" in c.labels).text.splitlines()
    header = header_line[header_line.index(next(t for t in header_line if t.startswith("|-"))) - 1]
    assert header == (
        "| # enc-layers | # dec-layers | Language | TEDs simple | TEDs complex | TEDs all "
        "| mAP (0.75) | Inference time (secs) |"
    )
    teds = next(cell for cell in table.data.table_cells if cell.text == "TEDs")
    assert (teds.start_col_offset_idx, teds.col_span, teds.column_header) == (3, 3, True)
    assert all(cell.bbox is not None for cell in table.data.table_cells)
    assert [c.text for c in table.data.table_cells if c.start_row_offset_idx == 2][-1] == "2.73"
    # the item text (the document's content) is the same Markdown
    assert header in ItemTexts(conversion.document).text(table)


def test_the_next_heading_gets_none_of_the_tables_columns(tmp_path):
    """The OTSL failure: the last column ("Inference time (secs) 2.73 5.39 ...") was stored
    under the next heading, the first column as a loose passage."""
    layout, table = make_table_pdf(tmp_path / "otsl.pdf", "spanning")
    chunks, _ = _chunks(layout.path)
    outside = "\n".join(c.text for c in chunks if "table" not in c.labels)
    for row in table.rows:
        assert row[-1] not in outside.split()
    assert not any(c.headings == ["6 Conclusion"] and "table" in c.labels for c in chunks)


def test_a_scanned_table_is_rebuilt_from_the_recognised_boxes(tmp_path):
    layout, table = make_table_pdf(tmp_path / "scan.pdf", "scanned", rows=8)
    chunks, conversion = _chunks(layout.path)
    assert conversion.pages_recognised == [1]
    (found,) = conversion.document.tables
    assert found.data.num_cols == len(table.header)
    table_chunks = [c for c in chunks if "table" in c.labels]
    lines = [line for c in table_chunks for line in c.text.splitlines()]
    header = next(lines[i - 1] for i, text in enumerate(lines) if text.startswith("|-"))
    assert [h.strip() for h in header.strip("|").split("|")] == table.header
    # each row: its depot label first and its carrier last, on one line of the table
    for row in table.rows:
        (line,) = [text for text in lines if text.startswith(f"| {row[0]} |")]
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[1] == row[1] and cells[-1] == row[-1], line


def test_running_text_in_columns_and_lists_is_not_a_table(tmp_path):
    """Two columns of prose side by side (bands of two long cells each), headings, a
    numbered list and a picture's caption make no table; the report's one ruled table stays
    the only table."""
    from pdf_factory import make_paper_pdf, make_report_pdf, make_two_column_pdf

    two = make_two_column_pdf(tmp_path / "two.pdf")
    assert convert_pdf(two.path.read_bytes(), source="two.pdf").document.tables == []
    report = make_report_pdf(tmp_path / "report.pdf")
    assert len(convert_pdf(report.path.read_bytes(), source="report.pdf").document.tables) == 1
    paragraphs = [
        f"Paragraph {n} of the study reports what the field team measured at site {n}, "
        "how the samples were stored, and which of them were sent to the laboratory." for n in range(12)
    ]
    paper = make_paper_pdf(tmp_path / "paper.pdf", title="A Field Study", authors=["A. Author"], paragraphs=paragraphs)
    assert convert_pdf(paper.path.read_bytes(), source="paper.pdf").document.tables == []


def test_a_grid_that_gives_way_to_its_text_table_leaves_that_table_read_once(tmp_path, monkeypatch):
    """Every column ruled but a rule only under every third row: the grid reads three printed
    rows as one and gives way to the table read from the page's text. With no grid left, the
    lines outside the grids are all the lines, whose tables were just read for the
    comparison: the unruled-table finder reads them once, not twice (it is counted here, and
    still runs)."""
    import haiku.rag.ingest.pdf as pdf

    read_on: list[int] = []
    finder = pdf.text_tables

    def counted(lines, geometry, *rules):
        read_on.append(geometry.page_no)
        return finder(lines, geometry, *rules)

    monkeypatch.setattr(pdf, "text_tables", counted)
    layout, table = make_table_pdf(tmp_path / "ruled_groups.pdf", "ruled_groups")
    chunks, _ = _chunks(layout.path)
    _check_rows(chunks, table, HEADINGS["ruled_groups"])
    assert read_on == list(range(1, layout.page_count + 1))
