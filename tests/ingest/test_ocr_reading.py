"""OCR'd text as a person reads it (DEFECTS 19:41, a typewritten 1972 letter): words joined
by the gaps measured on the line and its page, not a fixed share of the line height
("transmis s ion", "Dr . P .N. Cundall ,"), and a lone CJK glyph read from a note's icon on
a Latin page dropped while a Chinese name printed in the text stays. The scans are made
here: text set in Courier one letter per cell, as a typewriter does, rendered at 150 dpi and
wrapped as an image-only PDF page."""

from __future__ import annotations

import pymupdf
import pytest
from pdf_factory import image_only_pdf

from haiku.rag.ingest import ocr
from haiku.rag.ingest.pdf import convert_pdf

DPI = 150
SIZE = 11
# a typewriter's cell, a little wider than Courier's own 0.6 em: letters stand apart
PITCH = 0.65 * SIZE
LETTER = [
    (300, "18th January, 1972."),
    (24, "Dr. P.N. Cundall,"),
    (24, "Mining Surveys Ltd.,"),
    (24, "Reading, Berks."),
    (60, "Permit me to introduce you to the facility of facsimile"),
    (24, "transmission."),
    (60, "This signal is used to modulate a carrier, which is"),
    (24, "transmitted over a radio link; at the remote terminal"),
    (24, "the signal is read: the copy is produced (in facsimile)!"),
]




def _typewritten(page: pymupdf.Page, x: float, y: float, text: str) -> None:
    for column, char in enumerate(text):
        page.insert_text((x + column * PITCH, y), char, fontsize=SIZE, fontname="cour")


def _typewritten_letter() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=600, height=40 + 20 * len(LETTER))
    for row, (x, text) in enumerate(LETTER):
        _typewritten(page, x, 32 + 20 * row, text)
    return image_only_pdf(page, DPI)


def _lines(conversion) -> list[str]:
    return [
        text
        for item, _ in conversion.document.iterate_items()
        if (text := getattr(item, "text", ""))
    ]


def test_a_typewritten_letter_reads_as_a_person_reads_it():
    """Each letter sits centred in its cell, so the gaps inside a word (0.3 line heights
    between "i" and "s") pass the 0.2 a proportional font's word space is measured by; the
    line's (or, on a short line, the page's) spelled word spaces are twice that."""
    conversion = convert_pdf(_typewritten_letter(), source="letter.pdf")
    assert conversion.pages_recognised == [1]
    text = " ".join(_lines(conversion))
    for phrase in (
        "18th January, 1972.",
        "Dr. P.N. Cundall,",
        "Mining Surveys Ltd.,",
        "Reading, Berks.",
        "the facility of facsimile",
        "transmission.",
        "a carrier, which is",
        "transmitted over a radio link; at the remote terminal",
        "the signal is read: the copy is produced (in facsimile)!",
    ):
        assert phrase in text, (phrase, text)
    for punctuation in ".,;:)!":
        assert f" {punctuation}" not in text, text


def _note_icon(page: pymupdf.Page, x: float, y: float) -> None:
    """A sticky note's icon as a viewer draws it over a scan (the 1972 letter's "三"): a
    dark red sheet, a black outline, a folded corner, three white lines of "text"."""
    scale = 0.8
    width, height, fold = 12 * scale, 14 * scale, 4 * scale
    shape = page.new_shape()
    outline = [(x, y), (x + width, y), (x + width, y + height - fold)]
    outline += [(x + width - fold, y + height), (x, y + height), (x, y)]
    shape.draw_polyline(outline)
    shape.finish(color=(0, 0, 0), fill=(0.6, 0, 0), width=0.8 * scale)
    corner = [(x + width, y + height - fold), (x + width - fold, y + height - fold)]
    shape.draw_polyline([*corner, (x + width - fold, y + height)])
    shape.finish(color=(0, 0, 0), fill=(1, 1, 1), width=0.6 * scale)
    for row, length in enumerate((8, 8, 5)):
        line_y = y + (3.5 + 3.0 * row) * scale
        shape.draw_line((x + 2.5 * scale, line_y), (x + (2.5 + length) * scale, line_y))
        shape.finish(color=(1, 1, 1), width=0.9 * scale)
    shape.commit()


def _letter_with_a_note_and_chinese_names() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=160)
    page.insert_font(fontname="cjk", fontbuffer=pymupdf.Font("cjk").buffer)
    _typewritten(page, 200, 32, "18th January, 1972.")
    _note_icon(page, 230, 50)
    page.insert_text((24, 60), "张伟", fontsize=11, fontname="cjk")
    for y, line in (
        (100, "Permit me to introduce you to the facility of facsimile"),
        (120, "transmission over a radio or cable communications link."),
    ):
        page.insert_text((24, y), line, fontsize=11, fontname="cour")
    page.insert_text(
        (24, 140), "It was signed by 李明 and 王小明 in Beijing.", fontsize=11, fontname="cjk"
    )
    return image_only_pdf(page, DPI)


def _cjk(text: str) -> list[str]:
    return [char for char in text if ocr._is_cjk(char)]


def test_a_note_icon_read_as_a_cjk_glyph_is_dropped_and_chinese_names_stay(monkeypatch):
    """The icon is read as "三" with a confidence of 0.75-0.9 (by runtime); the names, a
    line of two glyphs of their own among them, with ~1."""
    pdf = _letter_with_a_note_and_chinese_names()
    # the recogniser does read the icon as a CJK glyph (kept when no confidence is too low)
    monkeypatch.setattr(ocr, "FOREIGN_MIN_SCORE", 0.0)
    unfiltered = _lines(convert_pdf(pdf, source="note.pdf"))
    assert "三" in unfiltered, unfiltered
    monkeypatch.undo()
    lines = _lines(convert_pdf(pdf, source="note.pdf"))
    text = " ".join(lines)
    assert sorted(_cjk(text)) == sorted("张伟李明王小明"), lines
    assert "张伟" in lines and "It was signed by 李明 and 王小明 in Beijing." in text
    assert "18th January, 1972." in text and "the facility of facsimile transmission" in text


def _read(chars: str, score: float = 1.0, gaps: list[float] | None = None) -> ocr.ReadLine:
    gaps = gaps or [0.0] + [0.05] * (len(chars) - 1)
    return ocr.ReadLine(
        chars=tuple(chars),
        gaps=tuple(gaps),
        spaced=(False,) * len(chars),
        char_scores=(score,) * len(chars),
        score=score,
    )


def test_a_lone_cjk_fragment_on_a_latin_page_is_noise_when_unsure_or_tiny_only():
    body = [_read("Permitmetointroduceyou")] * 4
    heights = [30.0] * 4
    unsure, sure = _read("三", 0.8), _read("三", 0.99)
    texts = ocr.drop_foreign_fragments([*body, unsure, sure, sure], [*heights, 30, 30, 12], None)
    assert texts[4:] == ["", "三", ""]  # unsure: dropped; sure: kept; sure but tiny: dropped
    # a longer CJK fragment is text, however unsure
    assert (
        ocr.drop_foreign_fragments([*body, _read("中华人民", 0.6)], [*heights, 30], None)[-1]
        == "中华人民"
    )
    # on a page whose text is Chinese, nothing of it is foreign
    chinese = [_read("中华人民共和国")] * 4
    assert ocr.drop_foreign_fragments([*chinese, unsure], [*heights, 30], None)[-1] == "三"


@pytest.mark.parametrize(
    "gaps, spaced, word_gap, expected",
    [
        # proportional type (word space 0.3): a left-out space over a 0.25 gap comes back
        ([0, 0.05, 0.25, 0.05], [False] * 4, 0.3, "ab cd"),
        # typewriter (word space 0.6): 0.3 inside a word is no space; 0.55 is one
        ([0, 0.3, 0.3, 0.05], [False] * 4, 0.6, "abcd"),
        ([0, 0.05, 0.55, 0.05], [False] * 4, 0.6, "ab cd"),
        # no word space measured: the fixed share of the line height, as before
        ([0, 0.3, 0.05, 0.05], [False] * 4, None, "a bcd"),
    ],
)
def test_left_out_spaces_come_back_by_the_measured_word_space(gaps, spaced, word_gap, expected):
    read = ocr.ReadLine(tuple("abcd"), tuple(gaps), tuple(spaced), (1.0,) * 4, 1.0)
    assert read.text(word_gap) == expected


def test_closing_punctuation_joins_its_word_across_a_gap_narrower_than_a_word_space():
    # "Ltd . ," on a typewriter: the model's own space before "." across 0.3 of a 0.6 word
    # space goes, and no space before ","; a word space before "!" stays a space
    read = ocr.ReadLine(
        tuple("Ltd.,x!"),
        (0, 0.1, 0.1, 0.3, 0.35, 0.6, 0.6),
        (False, False, False, True, False, True, True),
        (1.0,) * 7,
        1.0,
    )
    assert read.text(0.6) == "Ltd., x !"
    # a line that spells three word spaces measures its own, when the page's is wider
    spelled = ocr.ReadLine(
        tuple("abcd."), (0, 0.3, 0.3, 0.3, 0.2), (False, True, True, True, False), (1.0,) * 5, 1.0
    )
    assert spelled.word_gap(0.6) == pytest.approx(0.3)
    assert spelled.text(0.6) == "a b c d."


def test_a_table_rows_column_gaps_do_not_hide_the_word_spaces_left_out_in_its_cells():
    """A row read as one line whose spelled spaces are its column gaps (2 line heights): the
    word space the model left out inside a cell (0.3, over SPACE_GAP) still comes back, by
    the page's word space (0.3), not the row's."""
    row = ocr.ReadLine(
        tuple("ab12cd34ef"),
        (0, 0.05, 2.0, 0.05, 0.3, 0.05, 2.0, 0.05, 2.0, 0.05),
        (False, False, True, False, False, False, True, False, True, False),
        (1.0,) * 10,
        1.0,
    )
    assert row.text(0.3) == "ab 12 cd 34 ef"
    assert row.text(None) == "ab 12cd 34 ef"  # no page measure: the row's own (2.0)


def test_the_page_word_space_is_the_median_of_its_spelled_spaces():
    lines = [
        ocr.ReadLine(tuple("ab"), (0, gap), (False, True), (1.0, 1.0), 1.0)
        for gap in (0.5, 0.6, 0.6, 0.7, 2.0)
    ]
    assert ocr.page_word_gap(lines) == pytest.approx(0.6)
    assert ocr.page_word_gap(lines[:4]) is None  # too few to measure
