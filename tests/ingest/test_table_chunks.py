"""Tables in chunks: one Markdown line per row under the table's header, and chunking work
that grows linearly.

The work test counts the characters handed to the tokenizer, not seconds: a table twice as
long must not cost much more than twice as much tokenising (it cost the square before).
"""

import os
from collections import Counter

os.environ["HF_HUB_OFFLINE"] = "1"  # must precede docling-core/transformers imports

from docling_core.types.doc import (
    BoundingBox,
    CoordOrigin,
    DoclingDocument,
    ProvenanceItem,
    Size,
    TableCell,
    TableData,
)

from haiku.rag.embeddings.local import default_tokenizer
from haiku.rag.ingest.chunker import chunk_document
from haiku.rag.ingest.table_markdown import table_parts

PAGE = Size(width=612, height=792)


def cell(text: str, row: int, col: int, *, rows: int = 1, cols: int = 1, header: bool = False) -> TableCell:
    return TableCell(
        text=text,
        start_row_offset_idx=row,
        end_row_offset_idx=row + rows,
        start_col_offset_idx=col,
        end_col_offset_idx=col + cols,
        row_span=rows,
        col_span=cols,
        column_header=header,
    )


def document_with_table(cells: list[TableCell], num_rows: int, num_cols: int) -> DoclingDocument:
    doc = DoclingDocument(name="t")
    doc.add_page(page_no=1, size=PAGE)
    bbox = BoundingBox(l=72, t=100, r=540, b=700, coord_origin=CoordOrigin.TOPLEFT)
    doc.add_heading("Results", level=1, prov=ProvenanceItem(page_no=1, bbox=bbox, charspan=(0, 7)))
    doc.add_table(
        data=TableData(num_rows=num_rows, num_cols=num_cols, table_cells=cells),
        prov=ProvenanceItem(page_no=1, bbox=bbox, charspan=(0, 0)),
    )
    return doc


def test_each_row_is_a_line_of_triplets_and_spanning_or_empty_cells_add_no_noise() -> None:
    cells = [
        cell("Site", 0, 0, header=True),
        cell("Yield kg/ha", 0, 1, header=True),
        cell("Water mm", 0, 2, header=True),
        cell("Note", 0, 3, header=True),
        cell("North", 1, 0),
        cell("2,410", 1, 1),
        cell("95", 1, 2),
        # row 1 column 3 left empty
        cell("South", 2, 0),
        cell("drip line failed in week 3", 2, 1, cols=3),  # spans three columns
    ]
    doc = document_with_table(cells, num_rows=3, num_cols=4)
    assert table_parts(doc.tables[0], doc).rows == [
        "| North | 2,410 | 95 |  |",
        "| South | drip line failed in week 3 |  |  |",
    ]
    [chunk] = chunk_document(doc)
    assert chunk.text.splitlines() == [
        "| Site | Yield kg/ha | Water mm | Note |",
        "|-|-|-|-|",
        "| North | 2,410 | 95 |  |",
        "| South | drip line failed in week 3 |  |  |",
    ]
    assert chunk.labels == ["table"] and chunk.headings == ["Results"]


def test_a_header_only_table_gives_its_headers_and_a_header_less_table_uses_its_first_row() -> None:
    headers_only = document_with_table([cell("A", 0, 0, header=True), cell("B", 0, 1, header=True)], 1, 2)
    assert table_parts(headers_only.tables[0], headers_only).markdown == "| A | B |\n|-|-|"
    unflagged = document_with_table(
        [cell("Name", 0, 0), cell("Age", 0, 1), cell("Ada", 1, 0), cell("36", 1, 1)], 2, 2
    )
    assert table_parts(unflagged.tables[0], unflagged).markdown.splitlines() == [
        "| Name | Age |", "|-|-|", "| Ada | 36 |"
    ]


def test_a_pipe_in_a_cell_is_escaped_and_a_title_spanning_the_width_is_written_once() -> None:
    cells = [
        cell("Checks by state", 0, 0, cols=3, header=True),
        cell("State", 1, 0, header=True),
        cell("Permit", 1, 1, header=True),
        cell("Handgun", 1, 2, header=True),
        cell("Ohio", 2, 0),
        cell("12 | 14", 2, 1),
        cell("7", 2, 2),
    ]
    doc = document_with_table(cells, num_rows=3, num_cols=3)
    assert table_parts(doc.tables[0], doc).markdown.splitlines() == [
        "| Checks by state State | Permit | Handgun |",
        "|-|-|-|",
        "| Ohio | 12 \\| 14 | 7 |",
    ]


def wide_table(rows: int) -> DoclingDocument:
    """A table whose title cell spans every column, as PDF table finders often produce."""
    cols = 12
    cells = [cell("Monthly firearm background checks by state and permit type", 0, 0, cols=cols, header=True)]
    for r in range(1, rows):
        cells.append(cell(f"State {r}", r, 0))
        cells.extend(cell(f"{r * c:,} checks", r, c) for c in range(1, cols))
    return document_with_table(cells, num_rows=rows, num_cols=cols)


class CountingTokenizer:
    """The default tokenizer, counting the characters it is asked to encode."""

    truncation = None
    padding = None

    def __init__(self) -> None:
        self.inner = default_tokenizer()
        self.characters = 0

    def encode(self, text: str):
        self.characters += len(text)
        return self.inner.encode(text)


def test_chunking_a_table_twice_as_long_costs_about_twice_the_tokenising() -> None:
    work = {}
    for rows in (100, 200):
        tokenizer = CountingTokenizer()
        chunks = chunk_document(wide_table(rows), tokenizer=tokenizer)
        assert all(len(default_tokenizer().encode(c.embed_text).ids) <= 256 for c in chunks)
        assert any(f"| State {rows - 1} |" in c.text for c in chunks)  # nothing lost at the end
        work[rows] = tokenizer.characters
    assert work[200] < 2.6 * work[100], work


class WordLog:
    """The default tokenizer (WordPiece, untruncated), noting every word it is asked to encode."""

    truncation = None
    padding = None

    def __init__(self) -> None:
        from haiku.rag.ingest.chunker import _untruncated

        self.inner = _untruncated(default_tokenizer())
        self.words: Counter[str] = Counter()

    def to_str(self) -> str:
        return self.inner.to_str()

    def encode(self, text: str, add_special_tokens: bool = True):
        self.words.update(text.split())
        return self.inner.encode(text, add_special_tokens=add_special_tokens)

    def encode_batch_fast(self, texts: list[str]):
        for text in texts:
            self.words.update(text.split())
        return self.inner.encode_batch_fast(texts)


def test_a_tables_rows_are_tokenised_once_and_chunked_as_when_each_text_is_encoded_whole() -> None:
    """The rows are counted to cut the table into chunks, then the chunks' texts are counted:
    each word of a row reaches the tokenizer once (it was twice), and the chunks are those
    of encoding every text whole (the tokenizer without its WordPiece shortcut)."""
    rows, cols = 120, 6
    cells = [cell(f"Column{c}", 0, c, header=True) for c in range(cols)]
    cells += [cell(f"r{r}c{c}", r, c) for r in range(1, rows) for c in range(cols)]
    doc = document_with_table(cells, num_rows=rows, num_cols=cols)
    log = WordLog()
    chunks = chunk_document(doc, tokenizer=log)
    assert len(chunks) > 3  # cut by rows
    row_words = [f"r{r}c{c}" for r in range(1, rows) for c in range(cols)]
    assert all(any(f"| {word} |" in c.text for c in chunks) for word in row_words[::37])
    assert {log.words[word] for word in row_words} == {1}
    assert chunks == chunk_document(doc, tokenizer=CountingTokenizer())
