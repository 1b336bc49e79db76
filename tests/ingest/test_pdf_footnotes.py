"""Footnotes at a column's foot (tester 20:35, the DPR paper's p. 5): small type under a
short rule, each starting with a superscript number. The left column's last body line ends
with a hyphenated word that continues at the top of the right column; the footnotes were
read between the two halves ("When training with mul-\n8SQuAD is limited …"), their numbers
glued to their text. They are footnotes, read after the page's body, numbers kept apart,
and the word is joined again ("multiple")."""

from __future__ import annotations

import pymupdf
from docling_core.types.doc import DocItemLabel

from haiku.rag.config import load_config
from haiku.rag.ingest.pdf import convert_pdf
from haiku.rag.ingest.pipeline import prepare_document
from tests.pdf_factory import A4, BODY_FONT, MARGIN, wrap

BODY = 10.0
NOTE = 8.0
GUTTER = 20.0
COLUMN = (A4[0] - 2 * MARGIN - GUTTER) / 2
LEFT = (
    "Lighthouse keepers log every lamp failure in a ledger that the harbour office reads at the end of "
    "each month. Towers that share a keeper fail more often during storms, and relief crews reach them "
    "later than the towers with a resident keeper of their own. When training with"
)
RIGHT = (
    "tiple ledgers, the smallest harbour benefits most from the records of the others, because its own "
    "ledger holds too few storms to learn from. The larger harbours gain little from pooling."
)
NOTES = [
    ("7", "The estuary ledgers are limited to a small set of towers and thus introduce a bias."),
    ("8", "Tide tables were taken from the admiralty almanac of the same winter."),
]


def _footnote_page() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    font = pymupdf.Font(BODY_FONT)
    pitch = BODY * 1.2
    y = MARGIN
    lines = wrap(LEFT, COLUMN, BODY)
    lines[-1] += " mul-"
    for text in lines:
        page.insert_text((MARGIN, y + BODY), text, fontname=BODY_FONT, fontsize=BODY)
        y += pitch
    # the footnotes under a short rule at the left column's foot
    foot = A4[1] - MARGIN - 2 * 3 * NOTE * 1.2
    page.draw_line((MARGIN, foot - 6), (MARGIN + 0.4 * COLUMN, foot - 6), width=0.4)
    y = foot
    for number, text in NOTES:
        mark = 0.7 * NOTE
        page.insert_text((MARGIN, y + NOTE - 3), number, fontname=BODY_FONT, fontsize=mark)
        x = MARGIN + font.text_length(number, mark)
        for index, line in enumerate(wrap(text, COLUMN - 8, NOTE)):
            page.insert_text((x if index == 0 else MARGIN, y + NOTE), line, fontname=BODY_FONT, fontsize=NOTE)
            y += NOTE * 1.2
    y = MARGIN
    for text in wrap(RIGHT, COLUMN, BODY):
        page.insert_text((MARGIN + COLUMN + GUTTER, y + BODY), text, fontname=BODY_FONT, fontsize=BODY)
        y += pitch
    data = doc.tobytes()
    doc.close()
    return data


def test_column_foot_footnotes_come_after_the_body_and_the_word_is_joined() -> None:
    config = load_config()
    config.processing.ocr = False
    new = prepare_document(_footnote_page(), filename="notes.pdf", uri="file:///notes.pdf", config=config)
    text = "\n".join(chunk.text for chunk in new.chunks)
    assert "When training with multiple ledgers, the smallest harbour" in text
    assert "7 The estuary ledgers are limited" in text
    assert "8 Tide tables were taken" in text
    assert "7The" not in text and "8Tide" not in text
    assert text.index("pooling.") < text.index("7 The estuary")


def test_column_foot_footnotes_are_footnote_items() -> None:
    doc = convert_pdf(_footnote_page(), source="notes.pdf").document
    notes = [item.text for item in doc.texts if item.label == DocItemLabel.FOOTNOTE]
    assert notes == [f"{number} {text}" for number, text in NOTES]
    body = [item.text for item in doc.texts if item.label == DocItemLabel.TEXT]
    assert any("When training with multiple ledgers" in text for text in body)
