"""The chunker on real generated PDFs: the chunk contract end to end (tokens, heading path,
tables row by row, pages and boxes of the lines each chunk holds), and no docling-core chunker."""

import subprocess
import sys
from pathlib import Path

import pytest

from haiku.rag.config import AppConfig
from haiku.rag.embeddings.local import default_tokenizer
from haiku.rag.ingest.pipeline import prepare_document
from haiku.rag.ingest.records import Box, ChunkRecord
from tests import pdf_factory


def ingest(path: Path) -> list[ChunkRecord]:
    document = prepare_document(
        path.read_bytes(), filename=path.name, uri=path.as_uri(), config=AppConfig()
    )
    return document.chunks


def overlaps(box: Box, page: int, rect: tuple[float, float, float, float]) -> bool:
    return (
        box.page == page
        and min(box.x1, rect[2]) - max(box.x0, rect[0]) > 0
        and min(box.y1, rect[3]) - max(box.y0, rect[1]) > 0
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[pdf_factory.PdfLayout, list[ChunkRecord]]:
    layout = pdf_factory.make_report_pdf(tmp_path_factory.mktemp("report") / "report.pdf")
    return layout, ingest(layout.path)


def test_every_chunk_of_the_report_fits_the_embedders_tokens(report) -> None:
    _layout, chunks = report
    tokenizer = default_tokenizer()
    assert chunks and all(len(tokenizer.encode(c.embed_text).ids) <= 256 for c in chunks)
    assert [c.order for c in chunks] == list(range(len(chunks)))


def test_heading_paths_follow_the_sections(report) -> None:
    layout, chunks = report
    title = pdf_factory.REPORT_TITLE
    expected = {
        "p_intro": [title, "1 Introduction"],
        "p_background": [title, "1 Introduction", "1.1 Background"],
        "p_results": [title, "2 Results"],
        "p_discussion": [title, "2 Results", "2.1 Discussion"],
        "p_appendix": [title, "3 Appendix"],
    }
    for key, headings in expected.items():
        text = layout.block(key).text
        (holder,) = [c for c in chunks if text in c.text]
        assert holder.headings == headings, key
        assert holder.embed_text == "\n".join(headings) + "\n" + holder.text
    # headings are the path, never chunk text of their own; furniture is not chunked
    assert not any(c.text.strip() in ("1 Introduction", "2 Results") for c in chunks)
    assert not any(pdf_factory.REPORT_HEADER in c.text for c in chunks)


def test_the_table_is_chunked_row_by_row_with_its_box(report) -> None:
    layout, chunks = report
    (table_chunk,) = [c for c in chunks if "table" in c.labels]
    lines = table_chunk.text.splitlines()
    for region, shipments, delay in pdf_factory.REPORT_TABLE[1:]:
        assert f"| {region} | {shipments} | {delay} |" in lines
    assert "| Region | Shipments | Delay |" in lines
    page, rect = layout.tables["table"]
    assert any(overlaps(box, page, rect) for box in table_chunk.boxes)


def test_each_paragraph_is_boxed_on_its_page_where_it_was_drawn(report) -> None:
    layout, chunks = report
    for key in ("p_intro", "p_hyphen", "p_results", "p_appendix", "caption_fig1"):
        block = layout.block(key)
        # A figure's own chunk also quotes its caption (ingest/figures.py); the text chunk is
        # the one that must hold it with the caption's line boxes.
        (holder,) = [c for c in chunks if block.text in c.text and "picture" not in c.labels]
        for line in block.lines:
            assert any(overlaps(box, line.page, line.rect) for box in holder.boxes), (key, line)
        assert block.page in holder.page_numbers
        assert holder.page_numbers == sorted({box.page for box in holder.boxes})


def test_a_long_paragraph_over_two_pages_is_split_with_the_boxes_of_the_lines_each_part_holds(
    tmp_path: Path,
) -> None:
    sentences = [
        f"Observation {i} of the kelp survey recorded {i * 7} urchins near the northern buoy."
        for i in range(70)
    ]
    layout = pdf_factory.make_paper_pdf(
        tmp_path / "survey.pdf",
        title="A kelp survey",
        authors=["A. Diver"],
        paragraphs=[" ".join(sentences[:35]), " ".join(sentences[35:])],
    )
    chunks = ingest(layout.path)
    tokenizer = default_tokenizer()
    assert all(len(tokenizer.encode(c.embed_text).ids) <= 256 for c in chunks)
    drawn = [line for key in ("p_0", "p_1") for line in layout.block(key).lines]
    body = [c for c in chunks if "Observation" in c.text]
    assert len(body) >= 4
    # every sentence in exactly one chunk, in order
    held = [next(n for n, c in enumerate(body) if s in c.text) for s in sentences]
    assert held == sorted(held) and sorted(set(held)) == list(range(len(body)))
    for chunk in body:
        # the chunk's boxes are exactly the drawn lines whose text it holds (a line a cut
        # falls inside is kept by both neighbours)
        words = set(chunk.text.split())
        for line in drawn:
            inside = any(overlaps(box, line.page, line.rect) for box in chunk.boxes)
            if len(line.text) > 30 and line.text in chunk.text:
                assert inside, line
            elif not set(line.text.split()) & words:
                assert not inside, line
        assert chunk.page_numbers == sorted({line.page for line in drawn if any(
            overlaps(box, line.page, line.rect) for box in chunk.boxes)})
    assert {1, 2} <= {page for c in body for page in c.page_numbers}


def test_chunking_does_not_load_docling_cores_chunker_or_transformers(tmp_path: Path) -> None:
    layout = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    code = (
        "import sys; from pathlib import Path; from haiku.rag.config import AppConfig; "
        "from haiku.rag.ingest.pipeline import prepare_document; "
        f"p = Path({str(layout.path)!r}); "
        "d = prepare_document(p.read_bytes(), filename=p.name, uri='x', config=AppConfig()); "
        "assert d.chunks; "
        "print(sorted(m for m in ('docling_core.transforms.chunker', 'transformers', 'semchunk') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
