"""A page whose text layer does not decode (a font without a Unicode map: its glyph numbers
come out as U+FFFD) is read by OCR, even when a title in another font on the same page decodes.
A real 23-page review (its body in such a font, its title and abstract not) was stored as 41
chunks of U+FFFD and shown "ready" (tester, session 16)."""

from __future__ import annotations

import pymupdf
import pytest

from haiku.rag.ingest.pdf import convert_pdf

BODY = [
    "Perceived usefulness shapes the intention to use a system.",
    "Ease of use was measured with six items on a seven point scale.",
    "Davis proposed the model in his doctoral thesis in 1986.",
    "Later work added subjective norm and image as external variables.",
    "The survey reached 112 users of electronic mail at one company.",
    "Attitude toward using mediated the effect of beliefs on intention.",
    "Critics argue the model ignores group and social processes.",
    "Several meta-analyses confirmed the strong role of usefulness.",
]


def _undecodable_body_pdf(*, readable_page_first: bool = False) -> bytes:
    """A page: a title and a short abstract in Helvetica (they decode), then sixteen body lines in
    an embedded font made a subset with its Unicode map removed (each glyph extracts as
    U+FFFD, and draws as the letter it is: what OCR reads)."""
    doc = pymupdf.open()
    if readable_page_first:
        first = doc.new_page(width=595, height=842)
        for i, sentence in enumerate(BODY):
            first.insert_text((72, 72 + 20 * i), sentence, fontname="helv", fontsize=11)
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 72), "Overview of the Technology Acceptance Model", fontname="helv", fontsize=16)
    page.insert_text((72, 96), "Abstract: a review of where the model came from.", fontname="helv", fontsize=10)
    page.insert_font(fontname="body", fontbuffer=pymupdf.Font("cjk").buffer)
    for i in range(16):  # varied lines: sixteen copies of one line made OCR's orientation vote flip
        page.insert_text((72, 140 + 30 * i), BODY[i % len(BODY)], fontname="body", fontsize=12)
    doc.subset_fonts()
    doc = pymupdf.open("pdf", doc.tobytes())
    for xref in range(1, doc.xref_length()):
        if "ToUnicode" in doc.xref_get_keys(xref):
            doc.xref_set_key(xref, "ToUnicode", "null")
    return doc.tobytes()


def _text(conversion) -> str:
    return " ".join(getattr(item, "text", "") for item, _ in conversion.document.iterate_items())


def test_a_page_whose_body_does_not_decode_is_read_by_ocr_beside_a_title_that_does():
    data = _undecodable_body_pdf()
    layer = pymupdf.open("pdf", data)[0].get_text()
    assert "Overview of the Technology" in layer and "Perceived" not in layer  # the trap is real

    conversion = convert_pdf(data, source="review.pdf")
    assert conversion.pages_recognised == [1]
    text = _text(conversion)
    assert "\ufffd" not in text
    assert "perceived usefulness shapes the intention" in text.lower()
    assert "overview of the technology acceptance model" in text.lower()  # the title is kept too


def test_with_ocr_off_the_page_is_refused_as_undecodable_not_stored_as_read():
    from haiku.rag.errors import NeedsOCRError
    from haiku.rag.ingest.pdf import OcrOptions

    with pytest.raises(NeedsOCRError, match="cannot be decoded"):
        convert_pdf(_undecodable_body_pdf(), source="review.pdf", ocr=OcrOptions(enabled=False))


def test_a_page_ocr_cannot_read_keeps_only_its_text_that_decodes():
    """OCR off (or failing on the page): the undecodable page keeps its title and abstract,
    and nothing of its U+FFFD body is stored as text."""
    from haiku.rag.ingest.pdf import OcrOptions

    conversion = convert_pdf(
        _undecodable_body_pdf(readable_page_first=True), source="review.pdf", ocr=OcrOptions(enabled=False)
    )
    assert conversion.pages_needing_ocr == [2]
    text = _text(conversion)
    assert "\ufffd" not in text
    assert "Overview of the Technology Acceptance Model" in text and "Ease of use was measured" in text


# A real paper's charts set their axis labels in a Calibri subset whose glyphs are numbered in
# the order used, from "!" on, without a Unicode map: extraction gives these runs (copied from
# pdfjs__tracemonkey.pdf p. 11), printable, so they were stored and came first in quotes.
CHART_LABELS = ['!"', '#"', '$!"', '$#"', '%!"', '%#"', "&'()*+,\"", '-./"', '01"']
CAPTION = "Figure 10. Speedup vs. a baseline JavaScript interpreter for our trace-based JIT compiler."


def _chart_page_pdf(labels: list[str], label_font: str = "cour") -> bytes:
    """A page: body sentences and a caption in Helvetica, and a chart's labels in another font."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    for i, label in enumerate(labels):
        page.insert_text((90 + 40 * (i % 6), 90 + 16 * (i // 6)), label, fontname=label_font, fontsize=7)
    page.insert_text((72, 200), CAPTION, fontname="helv", fontsize=9)
    for i, sentence in enumerate(BODY):
        page.insert_text((72, 240 + 18 * i), sentence, fontname="helv", fontsize=11)
    return doc.tobytes()


def test_a_charts_numbered_glyphs_are_not_stored_beside_its_readable_caption():
    data = _chart_page_pdf(CHART_LABELS)
    assert "$!\"" in pymupdf.open("pdf", data)[0].get_text()  # the trap is real

    conversion = convert_pdf(data, source="paper.pdf")
    text = _text(conversion)
    assert conversion.pages_recognised == []  # the body decodes: no OCR for a chart's labels
    assert "Figure 10. Speedup" in text and "Perceived usefulness shapes" in text
    for label in CHART_LABELS:
        assert label not in text
    assert "\ufffd" not in text


def test_punctuation_and_code_in_a_font_of_their_own_are_kept():
    """Text that is punctuation in a font of its own but not a run of glyph numbers from "!"
    (a formula's signs, a code font's line) is text."""
    kept = ["( ) = + -", "f(x) = x^2 + 1;", "if (!done) { i += 1; }", "[1] [2] [3]"]
    text = _text(convert_pdf(_chart_page_pdf(kept), source="paper.pdf"))
    for line in kept:
        assert line in text


def test_tex_s_ff_ligature_read_as_a_return_arrow_is_stored_as_ff():
    """Computer Modern's "ff" (OT1 code 11, no Unicode map) extracts as U+21B5 "↵": a real
    paper's "efforts" and "off-the-shelf" were stored as "e↵orts" and "o↵-the-shelf". Beside
    a letter it is the ligature; a return-key symbol between spaces stays."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_font(fontname="uni", fontbuffer=pymupdf.Font("cjk").buffer)
    page.insert_text((72, 100), "There have been on-going e\u21b5orts to build an o\u21b5-the-shelf toolkit.", fontname="uni", fontsize=11)
    page.insert_text((72, 130), "Press \u21b5 to confirm the di\u21b5erent choice.", fontname="uni", fontsize=11)
    assert "e\u21b5orts" in page.get_text()  # the trap is real
    text = _text(convert_pdf(doc.tobytes(), source="paper.pdf"))
    assert "on-going efforts to build an off-the-shelf toolkit" in text
    assert "Press \u21b5 to confirm the different choice." in text
