"""chunk_document: token limits, heading paths, and boxes that are exact to the line."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # must precede docling-core/transformers imports

import pytest
from docling_core.types.doc import (
    DocItemLabel,
    DoclingDocument,
    TableCell,
    TableData,
)
from docling_factory import PAGE, add_paragraph, line_prov

from haiku.rag.embeddings.local import default_tokenizer
from haiku.rag.ingest.chunker import chunk_document
from haiku.rag.ingest.records import Box, ChunkRecord

LINE_HEIGHT = 14
# 40 distinct sentences of ~16 tokens, one per line: too long for one 256-token chunk
LONG_LINES = [
    f"Line {i:02d} reports that sample {i} was measured twice under controlled humidity."
    for i in range(40)
]
# the long paragraph starts at the bottom of page 1 and goes on at the top of page 2
LONG_LINES_ON_PAGE_1 = 10


def long_line_position(index: int) -> tuple[int, float]:
    if index < LONG_LINES_ON_PAGE_1:
        return 1, 600 + LINE_HEIGHT * index
    return 2, 72 + LINE_HEIGHT * (index - LONG_LINES_ON_PAGE_1)


def long_line_box(index: int) -> Box:
    page, top = long_line_position(index)
    return Box(page, 72, top, 540, top + 12)


def build_document() -> DoclingDocument:
    doc = DoclingDocument(name="study")
    doc.add_page(page_no=1, size=PAGE)
    doc.add_page(page_no=2, size=PAGE)
    doc.add_title("A study of things", prov=line_prov(1, 40, (0, 17)))
    doc.add_heading("1 Introduction", level=1, prov=line_prov(1, 80, (0, 14)))
    add_paragraph(doc, [(1, 100, "Short intro line one."), (1, 114, "Short intro line two.")])
    doc.add_heading("1.1 Background", level=2, prov=line_prov(1, 140, (0, 14)))
    add_paragraph(doc, [(*long_line_position(i), line) for i, line in enumerate(LONG_LINES)])
    add_paragraph(doc, [(2, 600, "A closing remark follows the long paragraph.")])
    cells = [
        TableCell(
            text=value,
            start_row_offset_idx=r,
            end_row_offset_idx=r + 1,
            start_col_offset_idx=c,
            end_col_offset_idx=c + 1,
            column_header=r == 0,
        )
        for r, row in enumerate([["Sample", "Value"], ["A", "1.5"], ["B", "2.5"]])
        for c, value in enumerate(row)
    ]
    doc.add_table(
        data=TableData(num_rows=3, num_cols=2, table_cells=cells), prov=line_prov(2, 620, (0, 0))
    )
    return doc


@pytest.fixture(scope="module")
def chunks() -> list[ChunkRecord]:
    return chunk_document(build_document())


def chunks_with(chunks: list[ChunkRecord], ref: str) -> list[ChunkRecord]:
    return [c for c in chunks if ref in c.doc_item_refs]


LONG_REF = "#/texts/4"  # title, 2 headings and the intro paragraph come first


def test_chunks_fit_the_embedders_256_tokens(chunks: list[ChunkRecord]) -> None:
    tokenizer = default_tokenizer()  # counts [CLS] and [SEP], like the embedder
    counts = [len(tokenizer.encode(c.embed_text).ids) for c in chunks]
    assert max(counts) <= 256
    assert [c.order for c in chunks] == list(range(len(chunks)))


def test_smaller_limits_are_respected() -> None:
    tokenizer = default_tokenizer()
    small = chunk_document(build_document(), max_tokens=64)
    assert len(small) > 10
    assert all(len(tokenizer.encode(c.embed_text).ids) <= 64 for c in small)


def test_heading_paths_and_embed_text(chunks: list[ChunkRecord]) -> None:
    intro = chunks[0]
    assert intro.headings == ["A study of things", "1 Introduction"]
    assert intro.text == "Short intro line one. Short intro line two."
    assert intro.embed_text == "A study of things\n1 Introduction\n" + intro.text
    assert intro.labels == ["text"] and intro.doc_item_refs == ["#/texts/2"]
    for chunk in chunks_with(chunks, LONG_REF):
        assert chunk.headings == ["A study of things", "1 Introduction", "1.1 Background"]


def test_split_paragraph_keeps_only_the_lines_each_chunk_holds(chunks: list[ChunkRecord]) -> None:
    parts = chunks_with(chunks, LONG_REF)
    assert len(parts) >= 2, "the long paragraph should have been split"
    seen: list[int] = []
    for part in parts:
        held = [i for i, line in enumerate(LONG_LINES) if line in part.text]
        long_boxes = [
            b for b in part.boxes if b in {long_line_box(i) for i in range(len(LONG_LINES))}
        ]
        assert long_boxes == [long_line_box(i) for i in held]
        seen.extend(held)
    assert seen == list(range(len(LONG_LINES)))  # every line once, in order

    first, second = parts[0], parts[1]
    assert first.doc_item_refs == [LONG_REF]
    lines_in_first = len(first.boxes)
    assert first.boxes == [long_line_box(i) for i in range(lines_in_first)]
    # the second chunk's boxes are the lower lines only, from where the first chunk ended
    assert second.boxes[0] == long_line_box(lines_in_first)


def test_a_line_cut_between_two_chunks_is_highlighted_in_both() -> None:
    # real PDF lines wrap mid-sentence, so a chunk boundary can fall inside a line
    words = [f"word{i}" for i in range(600)]
    lines = [" ".join(words[i : i + 9]) for i in range(0, len(words), 9)]
    doc = DoclingDocument(name="wrapped")
    doc.add_page(page_no=1, size=PAGE)
    item = add_paragraph(doc, [(1, 20 + 11 * i, line) for i, line in enumerate(lines)])
    parts = chunk_document(doc)
    assert len(parts) >= 2
    all_boxes = [Box(1, 72, 20 + 11 * i, 540, 32 + 11 * i) for i in range(len(lines))]
    for part in parts:
        start = item.text.index(part.text)
        held = [
            i
            for i, p in enumerate(item.prov)
            if p.charspan[0] < start + len(part.text) and p.charspan[1] > start
        ]
        assert part.boxes == [all_boxes[i] for i in held]
    for before, after in zip(parts, parts[1:], strict=False):
        shared = set(before.boxes) & set(after.boxes)
        assert len(shared) <= 1  # at most the line the boundary falls in
        assert after.boxes[0] in (
            before.boxes[-1],
            all_boxes[all_boxes.index(before.boxes[-1]) + 1],
        )


def test_page_numbers_come_from_the_lines_held(chunks: list[ChunkRecord]) -> None:
    first, second = chunks_with(chunks, LONG_REF)[:2]
    assert first.page_numbers == [1, 2]
    assert second.page_numbers == [2]  # the paragraph spans pages 1-2, this part only page 2


def test_tail_of_a_split_paragraph_merged_with_the_next_items(chunks: list[ChunkRecord]) -> None:
    last = chunks_with(chunks, LONG_REF)[-1]
    assert last.doc_item_refs == [LONG_REF, "#/texts/5", "#/tables/0"]
    assert last.labels == ["text", "text", "table"]
    tail = [i for i, line in enumerate(LONG_LINES) if line in last.text]
    assert tail[-1] == len(LONG_LINES) - 1 and tail[0] > 0
    assert last.boxes == [long_line_box(i) for i in tail] + [
        Box(2, 72, 600, 540, 612),  # the closing remark
        Box(2, 72, 620, 540, 632),  # the table
    ]


def test_documents_without_geometry_give_chunks_without_boxes() -> None:
    doc = DoclingDocument(name="notes.md")
    doc.add_heading("Notes", level=1)
    doc.add_text(label=DocItemLabel.TEXT, text="Remember to water the plants.")
    (chunk,) = chunk_document(doc)
    assert chunk.headings == ["Notes"]
    assert (chunk.boxes, chunk.page_numbers) == ([], [])


def test_a_truncating_tokenizer_is_not_trusted_nor_modified() -> None:
    tokenizer = default_tokenizer().__class__.from_str(default_tokenizer().to_str())
    tokenizer.enable_truncation(max_length=32)
    chunks = chunk_document(build_document(), tokenizer=tokenizer)
    assert max(len(default_tokenizer().encode(c.embed_text).ids) for c in chunks) <= 256
    assert len(chunks_with(chunks, LONG_REF)) >= 2  # true lengths were counted
    assert tokenizer.truncation is not None and tokenizer.truncation["max_length"] == 32
