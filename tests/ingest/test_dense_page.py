"""A page whose only text is one enormous line is indexed by what fits, not refused.

Issue 19 (output hygiene): a page holding one 5 MB line (drawn in a tiny font, so it stays on
the page) was refused as "its 1 pages contain no text": the per-page character budget dropped
the whole line, the page's only one. It now keeps the line's head up to the budget and says
so in a warning.
"""

from __future__ import annotations

import pymupdf

from haiku.rag.ingest.pdf import convert_pdf
from haiku.rag.ingest.pdf.extract import MAX_CHARS_PER_PAGE


def _one_line_pdf(chars: int) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page()
    text = ("harbour " * (chars // 8 + 1))[:chars]
    # small enough that the whole line lies on the page (MuPDF clips text outside it)
    page.insert_text((20, 100), text, fontsize=500 / chars)
    data = doc.tobytes(deflate=True)
    doc.close()
    return data


def test_a_page_whose_only_text_is_one_huge_line_is_indexed_by_its_head():
    conversion = convert_pdf(_one_line_pdf(MAX_CHARS_PER_PAGE + 100_000), source="one-line.pdf")
    text = conversion.document.export_to_markdown()
    assert "harbour harbour" in text
    assert MAX_CHARS_PER_PAGE * 0.9 <= len(text) <= MAX_CHARS_PER_PAGE * 1.1
    assert any("text truncated" in w and "abnormally dense" in w for w in conversion.warnings)
