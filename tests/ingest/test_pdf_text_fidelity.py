"""Text as the page says it: pieces of one printed line drawn out of order, and two-column
pages whose figure bleeds across the gutter (generated PDFs, real conversion and chunking)."""

from __future__ import annotations

import pymupdf
import pytest

from haiku.rag.ingest.chunker import chunk_document
from haiku.rag.ingest.items import ItemTexts
from haiku.rag.ingest.pdf import convert_pdf

SIZE = 10
REST = " to create a context. More words follow on this line"
PIECES = [("Call ", "helv"), ("fz_", "cour"), ("new", "cour"), ("_context", "cour"), (REST, "helv")]
NEXT_LINES = [
    "and the paragraph goes on with a second line of ordinary words,",
    "and a third line that ends the paragraph about contexts.",
]


def _positions(x: float) -> dict[str, float]:
    xs = {}
    for text, font in PIECES:
        xs[text] = x
        x += pymupdf.get_text_length(text, font, SIZE)
    return xs


def _identifier_pdf(order: str) -> bytes:
    """One paragraph whose first line prints "Call fz_new_context to create a context...",
    with the content stream drawing its pieces in the given ``order``:
    ``stream``: left to right (how most PDFs do it);
    ``new_last``: everything but ``new``, the paragraph's other lines, then ``new`` (MuPDF
    extracts ``new`` as a block of its own after the paragraph: "MuPDF Explored");
    ``by_font``: the Helvetica pieces first, then the Courier identifier."""
    doc = pymupdf.open()
    page = doc.new_page()
    y = 100.0
    xs = _positions(72.0)
    drawn = {
        "stream": PIECES,
        "new_last": [p for p in PIECES if p[0] != "new"],
        "by_font": sorted(PIECES, key=lambda p: p[1] != "helv"),
    }[order]
    for text, font in drawn:
        page.insert_text((xs[text], y), text, fontname=font, fontsize=SIZE)
    for n, line in enumerate(NEXT_LINES, 1):
        page.insert_text((72, y + 12 * n), line, fontname="helv", fontsize=SIZE)
    if order == "new_last":
        page.insert_text((xs["new"], y), "new", fontname="cour", fontsize=SIZE)
    data = doc.tobytes()
    doc.close()
    return data


@pytest.mark.parametrize("order", ["stream", "new_last", "by_font"])
def test_an_identifier_drawn_out_of_order_stays_one_word_in_its_line(order: str):
    data = _identifier_pdf(order)
    with pymupdf.open(stream=data) as doc:  # the mechanism is there: MuPDF splits the line
        lines = [line for b in doc[0].get_text("dict")["blocks"] for line in b.get("lines", [])]
        assert len(lines) == (3 if order == "stream" else 5)
    document = convert_pdf(data, source="mupdf-explored.pdf").document
    text = ItemTexts(document).document_markdown()
    expected = "Call fz_new_context" + REST + " " + " ".join(NEXT_LINES)
    assert text == expected
    chunks = chunk_document(document, max_tokens=256)
    assert [c.text for c in chunks] == [expected]
    # the joined line has one box spanning all its pieces, on the first line's row
    item = document.texts[0]
    first = item.prov[0]
    assert item.text[first.charspan[0] : first.charspan[1]] == "Call fz_new_context" + REST
    assert first.bbox.l == pytest.approx(72.0, abs=0.5)
    end = 72.0 + sum(pymupdf.get_text_length(t, f, SIZE) for t, f in PIECES)
    assert first.bbox.r == pytest.approx(end, abs=1.0)
    assert [p.charspan for p in item.prov][1:] == [
        (
            len("Call fz_new_context" + REST) + 1,
            len("Call fz_new_context" + REST) + 1 + len(NEXT_LINES[0]),
        ),
        (len(expected) - len(NEXT_LINES[1]), len(expected)),
    ]


def test_pieces_of_a_line_drawn_apart_keep_the_space_between_words():
    """Two pieces with a word space between their boxes (no space character in either) are
    joined with a space; abutting pieces are joined without one."""
    doc = pymupdf.open()
    page = doc.new_page()
    first, second = "The function", "returns zero."
    x2 = 72 + pymupdf.get_text_length(first + " ", "helv", SIZE)
    page.insert_text((x2, 100), second, fontname="helv", fontsize=SIZE)
    page.insert_text((72, 100), first, fontname="helv", fontsize=SIZE)
    text = ItemTexts(convert_pdf(doc.tobytes(), source="x.pdf").document).document_markdown()
    assert text == "The function returns zero."


def test_columns_and_cells_apart_are_not_joined():
    """Text on one row but a gutter apart stays in its column, left column first, even when
    the PDF draws the right column first (pieces are joined only when they abut)."""
    doc = pymupdf.open()
    page = doc.new_page()
    left = [f"left column line {i} with words" for i in range(8)]
    right = [f"right column line {i} with words" for i in range(8)]
    for i, b in enumerate(right):  # the right column drawn first
        page.insert_text((320, 100 + 12 * i), b, fontname="helv", fontsize=SIZE)
    for i, a in enumerate(left):
        page.insert_text((72, 100 + 12 * i), a, fontname="helv", fontsize=SIZE)
    text = ItemTexts(convert_pdf(doc.tobytes(), source="x.pdf").document).document_markdown()
    assert text.split("\n\n") == [" ".join(left), " ".join(right)]


def _png(width: int, height: int) -> bytes:
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, width, height), False)
    pixmap.set_rect(pixmap.irect, (90, 140, 200))
    return pixmap.tobytes("png")


def test_two_figures_side_by_side_do_not_cut_the_columns():
    """A figure in each column, close enough across the gutter to be one picture that
    bleeds to the page edge: the page still reads left column, then right column (it was
    read as a run of one-column bands: paragraphs of both columns interleaved)."""
    doc = pymupdf.open()
    page = doc.new_page(width=594, height=774)
    left = [
        f"Left paragraph {n} sentence about bolts and nuts in the first column." for n in range(4)
    ]
    right = [
        f"Right paragraph {n} sentence about locking nuts in the second column." for n in range(4)
    ]
    for column, texts in ((72, left), (321, right)):
        for n, paragraph in enumerate(texts):  # paragraphs of 2 lines, 70 pt apart
            box = pymupdf.Rect(column, 60 + 70 * n, column + 240, 120 + 70 * n)
            page.insert_textbox(box, paragraph, fontname="helv", fontsize=SIZE)
    y = 60 + 70 * 4
    # the right column's figure starts beside the left column's last paragraph
    page.insert_image(pymupdf.Rect(321, y - 40, 594, 690), stream=_png(40, 40))
    page.insert_image(pymupdf.Rect(71, y + 40, 312, 690), stream=_png(40, 40))
    text = ItemTexts(convert_pdf(doc.tobytes(), source="x.pdf").document).document_markdown()
    positions = [text.index(p[:20]) for p in left + right]
    assert positions == sorted(positions)
