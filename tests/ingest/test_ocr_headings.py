"""Headings only from real headings on a page read by OCR: a comic printed in a book (Free
Culture's "Judge Scalia" strip) had its title lettering joined with the speech bubble
beside it into one "line", which became a section heading that led the rest of the book's
heading paths ("… › JUIDGIE SCALIA GO! RUN BACK TO YOUR B-BUT YOU MUST AGREE › AFTERWORD ›
INDEX"): text OCR reads inside a picture is never a heading. Real OCR on a generated PDF."""

from __future__ import annotations

import pymupdf

from haiku.rag.ingest.chunker import chunk_document
from haiku.rag.ingest.pdf import convert_pdf

BUBBLE = ["GO! RUN BACK TO YOUR", "CORPORATIONS, PUNK!"]


def _comic_png() -> bytes:
    """Two panels: the strip's title in large bold lettering at the right of the first, a
    speech bubble's small lettering just across the gutter in the second, on the same row."""
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=260)
    for x0, x1 in ((5, 205), (210, 395)):
        page.draw_rect(pymupdf.Rect(x0, 5, x1, 255), color=(0, 0, 0), width=1.5)
    title = "JUDGE SCALIA"
    page.insert_text((200 - pymupdf.get_text_length(title, "hebo", 24), 60), title, fontname="hebo", fontsize=24)
    for i, text in enumerate(BUBBLE):
        page.insert_text((214, 50 + 11 * i), text, fontname="helv", fontsize=9)
    page.draw_circle((105, 170), 50, color=(0, 0, 0), fill=(0.3, 0.3, 0.3))
    page.draw_circle((300, 170), 50, color=(0, 0, 0), fill=(0.5, 0.5, 0.5))
    return page.get_pixmap(dpi=200).tobytes("png")


def _book_pdf() -> bytes:
    """An afterword (text layer), a page that is the comic as an image (read by OCR; only its
    page number is text), then the index (text layer)."""
    doc = pymupdf.open()
    body = "The court decided the case and the papers wrote about it at length for weeks."
    page = doc.new_page(width=400, height=600)
    page.insert_text((60, 100), "AFTERWORD", fontname="hebo", fontsize=18)
    for i in range(12):
        page.insert_text((60, 140 + 14 * i), body, fontname="helv", fontsize=10)
    page = doc.new_page(width=400, height=600)
    page.insert_image(pymupdf.Rect(30, 80, 370, 301), stream=_comic_png())
    page.insert_text((300, 560), "BALANCES 247", fontname="helv", fontsize=8)
    page = doc.new_page(width=400, height=600)
    page.insert_text((60, 100), "INDEX", fontname="hebo", fontsize=14)
    for i in range(12):
        page.insert_text((60, 140 + 14 * i), f"Entry {i} on the court and its papers, {i + 20}", fontname="helv", fontsize=10)
    data = doc.tobytes()
    doc.close()
    return data


def test_a_comic_read_by_ocr_gives_no_heading():
    conversion = convert_pdf(_book_pdf(), source="free-culture.pdf")
    assert conversion.pages_recognised == [2]
    document = conversion.document
    comic = [item for item in document.texts if item.prov[0].page_no == 2]
    assert all(item.label not in ("section_header", "title") for item in comic)
    text = " ".join(item.text for item in comic)  # the comic's words are still stored
    assert "SCALIA" in text and "RUN BACK" in text
    chunks = chunk_document(document)
    assert all("SCALIA" not in heading for chunk in chunks for heading in chunk.headings or [])
    index = [chunk for chunk in chunks if "Entry 0" in chunk.text]
    assert index and index[0].headings[-1] == "INDEX"


BUBBLES = [
    ["SUPERMAN IS ON", "PATROL OVER THE", "CITY TONIGHT"],
    ["THAT CRY CAME", "FROM THIS OLD", "BUILDING HERE"],
    ["WELCOME TO MY", "PUBLIC DOMAIN", "SUPERMAN"],
]


def _strip_pdf() -> bytes:
    """A page whose picture is a comic of two rows of three panels, a three-line speech
    bubble at the top of each: its bubbles' lines line up across the panels like a table's."""
    strip = pymupdf.open()
    art = strip.new_page(width=400, height=300)
    for y0 in (5, 150):
        for x0 in (5, 135, 265):
            art.draw_rect(pymupdf.Rect(x0, y0, x0 + 125, y0 + 140), color=(0, 0, 0), width=1.5)
        for col, lines in enumerate(BUBBLES):
            for i, text in enumerate(lines):
                art.insert_text((12 + 130 * col, y0 + 20 + 11 * i), text, fontname="helv", fontsize=9)
        for x in (67, 197, 327):
            art.draw_circle((x, y0 + 95), 25, color=(0, 0, 0), fill=(0.4, 0.4, 0.4))
    png = art.get_pixmap(dpi=200).tobytes("png")
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=600)
    page.insert_text((60, 100), "AFTERWORD", fontname="hebo", fontsize=18)
    for i in range(12):
        page.insert_text((60, 140 + 14 * i), "The court decided the case and the papers wrote about it.", fontname="helv", fontsize=10)
    page = doc.new_page(width=400, height=600)
    page.insert_image(pymupdf.Rect(30, 80, 370, 335), stream=png)
    page.insert_text((300, 560), "BALANCES 247", fontname="helv", fontsize=8)
    data = doc.tobytes()
    doc.close()
    return data


def test_a_comic_read_by_ocr_is_not_a_table():
    conversion = convert_pdf(_strip_pdf(), source="strip.pdf")
    assert conversion.pages_recognised == [2]
    document = conversion.document
    assert document.tables == []
    texts = [item.text for item in document.texts if item.prov[0].page_no == 2]
    for lines in BUBBLES:  # each bubble stored whole, as it reads
        assert " ".join(lines) in texts
