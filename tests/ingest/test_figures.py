"""Figure chunks (ingest/figures.py): a picture with words about it is one chunk that names
the picture first; a picture with no words about it stays out."""

from __future__ import annotations

import pymupdf
from pdf_factory import make_report_pdf

from haiku.rag.config import AppConfig
from haiku.rag.ingest.pipeline import prepare_document


def _figure_chunks(data: bytes):
    new = prepare_document(data, filename="f.pdf", uri="f", config=AppConfig())
    return [c for c in new.chunks if c.doc_item_refs[0].startswith("#/pictures/")], new


def test_a_captioned_picture_is_a_chunk_with_its_caption_page_and_box(tmp_path):
    layout = make_report_pdf(tmp_path / "report.pdf")
    (figure,), new = _figure_chunks(layout.path.read_bytes())
    assert figure.text == "Figure 1: Throughput of the narwhal pipeline"
    assert figure.labels == ["picture", "caption"] and figure.page_numbers == [2]
    page, rect = layout.pictures["figure"]
    box = figure.boxes[0]
    assert (box.page, box.x0, box.y0, box.x1, box.y1) == pytest_approx(page, rect)
    assert figure.order == max(c.order for c in new.chunks)  # after the document's own chunks


def pytest_approx(page, rect):
    import pytest

    return (page, *(pytest.approx(v, abs=0.5) for v in rect))


def test_a_picture_with_no_words_about_it_makes_no_chunk():
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=400)
    page.insert_text((40, 50), "A page about lighthouses and their keepers on the cape.", fontsize=11)
    samples = bytes(v for _ in range(40) for x in range(80) for v in (x * 3, 90, 200))
    page.insert_image(pymupdf.Rect(40, 120, 240, 220), pixmap=pymupdf.Pixmap(pymupdf.csRGB, 80, 40, samples, False))
    figures, new = _figure_chunks(doc.tobytes())
    assert figures == [] and new.chunks
