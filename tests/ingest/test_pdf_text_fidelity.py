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


def _rule_underscored_pdf(rules_last: bool) -> bytes:
    """"Call fz_new_context to create a context..." with each "_" drawn as LaTeX draws ``\\_``
    in an OT1 font: no glyph, a 0.06 em kern and a 0.3 em wide, 0.4 pt thick rule on the
    baseline. ``rules_last``: the rules drawn after the line's text (MuPDF then extracts one
    line with a synthesised space in each gap) rather than between its pieces (MuPDF then
    ends a text block at each rule: "Call fz", "new" and "context ..." come apart)."""
    doc = pymupdf.open()
    page = doc.new_page()
    y, x = 100.0, 72.0
    texts: list[tuple[float, str, str]] = [(x, "Call", "helv")]
    x += pymupdf.get_text_length("Call ", "helv", SIZE)
    rules = []
    for n, part in enumerate(["fz", "new", "context"]):
        texts.append((x, part, "cour"))
        x += pymupdf.get_text_length(part, "cour", SIZE)
        if n < 2:
            x += 0.06 * SIZE
            rules.append((len(texts), pymupdf.Rect(x, y - 0.4, x + 0.3 * SIZE, y)))
            x += 0.3 * SIZE
    texts.append((x, REST, "helv"))
    for n, (tx, text, font) in enumerate(texts):
        for after, rect in rules:
            if not rules_last and after == n:
                page.draw_rect(rect, color=None, fill=(0, 0, 0))
        page.insert_text((tx, y), text, fontname=font, fontsize=SIZE)
    if rules_last:
        for _, rect in rules:
            page.draw_rect(rect, color=None, fill=(0, 0, 0))
    for n, line in enumerate(NEXT_LINES, 1):
        page.insert_text((72, y + 12 * n), line, fontname="helv", fontsize=SIZE)
    data = doc.tobytes()
    doc.close()
    return data


@pytest.mark.parametrize("rules_last", [False, True], ids=["rules-inline", "rules-last"])
def test_an_underscore_drawn_as_a_rule_stays_in_its_identifier(rules_last: bool):
    """"fz_new_context" typeset with rules for underscores was stored as "fz / context ... /
    new" (three lines) or "fz new context"; it reads as printed, one word on its line."""
    document = convert_pdf(_rule_underscored_pdf(rules_last), source="mupdf-explored.pdf").document
    text = ItemTexts(document).document_markdown()
    assert "Call fz_new_context" + REST in text
    assert "fz new" not in text and not text.endswith("new")
    first = document.texts[0]
    assert first.text[first.prov[0].charspan[0] : first.prov[0].charspan[1]] == "Call fz_new_context" + REST


def test_form_blanks_and_underlines_are_not_underscores():
    """A form's blank between two words, and an underlined word, keep their words apart."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Age", fontname="helv", fontsize=SIZE)
    blank_start = 72 + pymupdf.get_text_length("Age ", "helv", SIZE)
    page.draw_line((blank_start, 101), (blank_start + 40, 101), width=0.5)
    page.insert_text((blank_start + 43, 100), "years", fontname="helv", fontsize=SIZE)
    page.insert_text((72, 130), "See the", fontname="helv", fontsize=SIZE)
    x = 72 + pymupdf.get_text_length("See the ", "helv", SIZE)
    width = pymupdf.get_text_length("manual", "helv", SIZE)
    page.draw_line((x, 131), (x + width, 131), width=0.5)
    page.insert_text((x, 130), "manual", fontname="helv", fontsize=SIZE)
    page.insert_text((x + width + 3, 130), "for details.", fontname="helv", fontsize=SIZE)
    text = ItemTexts(convert_pdf(doc.tobytes(), source="form.pdf").document).document_markdown()
    assert "_" not in text
    assert "Age" in text and "years" in text and "See the manual for details." in text
