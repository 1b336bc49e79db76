"""Headings as a reader sees them, on generated PDFs: heading paths are paths (a sibling
section is never nested under another), the authors under a title and a form's buttons are
not headings."""

from __future__ import annotations

import pymupdf
from docling_core.types.doc import SectionHeaderItem, TitleItem
from paper_factory import PASA_AUTHORS, make_pasa_like_pdf

from haiku.rag.ingest.chunker import chunk_document
from haiku.rag.ingest.pdf import convert_pdf

BODY = "The method is described here in ordinary words that make up a paragraph of text. " * 4


def _headings(document) -> list[tuple[str, int]]:
    return [
        (t.text, t.level if isinstance(t, SectionHeaderItem) else 0)
        for t in document.texts
        if isinstance(t, (SectionHeaderItem, TitleItem))
    ]


def _sections_pdf() -> bytes:
    """Numbered sections (14 pt bold) and subsections (12 pt bold), an unnumbered "Abstract"
    in a style of its own (13 pt bold), an unnumbered subsection in the subsections' style
    ("Crawler") and an unnumbered bold body-size paragraph heading ("Crawler budget")."""
    doc = pymupdf.open()
    page = doc.new_page()
    y = 72.0

    def heading(text: str, size: float) -> None:
        nonlocal y
        page.insert_text((72, y), text, fontname="hebo", fontsize=size)
        y += size + 6

    def paragraph() -> None:
        nonlocal y
        nonlocal page
        if y > 640:
            page = doc.new_page()
            y = 72.0
        page.insert_textbox(pymupdf.Rect(72, y - 8, 540, y + 60), BODY, fontname="helv", fontsize=10)
        y += 70

    page.insert_text((72, y), "A Paper About Agents", fontname="hebo", fontsize=20)
    y += 34
    heading("Abstract", 13)
    paragraph()
    heading("4 Methodology", 14)
    paragraph()
    heading("4.3 Selector", 12)
    paragraph()
    heading("5 Experiments", 14)
    paragraph()
    heading("5.1 Setup", 12)
    paragraph()
    heading("Crawler", 12)
    paragraph()
    heading("Crawler budget", 10)
    paragraph()
    heading("6 Conclusion", 14)
    paragraph()
    data = doc.tobytes()
    doc.close()
    return data


def test_heading_paths_are_paths_not_chains_of_siblings():
    document = convert_pdf(_sections_pdf(), source="agents.pdf").document
    levels = dict(_headings(document))
    assert levels["4 Methodology"] == 1 and levels["4.3 Selector"] == 2
    # an unnumbered heading in the subsections' style is a subsection: a sibling of 5.1
    assert levels["Crawler"] == 2, levels
    assert levels["Crawler budget"] == 3  # bold body type: below the deepest numbered level
    paths = {c.text.split(" ")[0] + str(n): tuple(c.headings) for n, c in enumerate(chunk_document(document, max_tokens=128))}
    by_last = {path[-1]: path for path in paths.values()}
    assert by_last["4.3 Selector"][1:] == ("4 Methodology", "4.3 Selector")
    assert by_last["Crawler"][1:] == ("5 Experiments", "Crawler")
    assert by_last["Crawler budget"][1:] == ("5 Experiments", "Crawler", "Crawler budget")
    assert by_last["6 Conclusion"][1:] == ("6 Conclusion",)


def test_the_authors_and_affiliations_under_a_title_are_not_headings():
    document = convert_pdf(make_pasa_like_pdf(), source="2501.10120v1.pdf").document
    found = _headings(document)
    texts = " | ".join(text for text, _ in found)
    for given, family, _ in PASA_AUTHORS:
        assert f"{given} {family}" not in texts, found
    assert "ByteDance" not in texts
    assert ("PaSa: An LLM Agent for Comprehensive Academic Paper Search", 0) in found
    assert ("1 Introduction", 1) in found


def test_a_form_button_is_not_a_heading():
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 80), "1 Purpose of this form", fontname="hebo", fontsize=12)
    page.insert_textbox(pymupdf.Rect(72, 90, 540, 200), BODY, fontname="helv", fontsize=10)
    button = pymupdf.Widget()
    button.field_type = pymupdf.PDF_WIDGET_TYPE_BUTTON
    button.field_name = "print"
    button.rect = pymupdf.Rect(400, 30, 540, 60)
    button.button_caption = "Print Form"
    button.text_font = "HeBo"
    button.text_fontsize = 14
    page.add_widget(button)
    data = doc.tobytes()
    with pymupdf.open(stream=data) as check:  # the caption is text on the page
        assert "Print Form" in check[0].get_text()
    document = convert_pdf(data, source="form.pdf").document
    found = _headings(document)
    assert all("Print" not in text for text, _ in found), found
    assert ("1 Purpose of this form", 1) in [(t, lv) for t, lv in found] or ("1 Purpose of this form", 0) in found


def test_a_title_or_heading_of_capitalised_words_is_not_taken_for_names():
    """"Pride and Prejudice" at the top of a first page is its title; a front-matter heading
    of single capitalised words joined by "and" stays a heading."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), "Pride and Prejudice", fontname="hebo", fontsize=20)
    page.insert_text((72, 130), "Jane Austen and Cassandra Austen", fontname="helv", fontsize=13)
    page.insert_text((72, 170), "Letters and Drafts", fontname="hebo", fontsize=13)
    page.insert_textbox(pymupdf.Rect(72, 185, 540, 400), BODY * 2, fontname="helv", fontsize=10)
    found = dict(_headings(convert_pdf(doc.tobytes(), source="novel.pdf").document))
    assert found.get("Pride and Prejudice") == 0, found
    assert "Letters and Drafts" in found
    assert "Jane Austen and Cassandra Austen" not in found
