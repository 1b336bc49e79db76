"""Running headers and footers real documents print that the 10 % zone and digit-only
matching missed (tester, session 17): a LaTeX article's alternating running heads 14 % down
its pages, a book's footer with roman page numbers on either side ("xiv PREFACE", "PREFACE
xv"). They are page furniture, never passage text or highlights; titles that only look alike
("Exhibit 2.3.59-42 …", "Exhibit 2.3.59-58 …") at the top of a manual's pages stay text."""

from __future__ import annotations

import pymupdf
from docling_core.types.doc import ContentLayer

from haiku.rag.ingest.pdf import convert_pdf

BODY = (
    "The summaries of a query log are computed from the cube's dimensions and measures, and "
    "each summary is checked against the log it describes before it is kept."
)


def _layers(data: bytes) -> dict[str, set[str]]:
    doc = convert_pdf(data, source="a.pdf").document
    layers: dict[str, set[str]] = {"body": set(), "furniture": set()}
    for item in doc.texts:
        layers[item.content_layer.value if item.content_layer == ContentLayer.FURNITURE else "body"].add(item.text)
    return layers


def _pages(top_lines: list[str], bottom_lines: list[str], top_y: float = 118) -> bytes:
    doc = pymupdf.open()
    for n, (head, foot) in enumerate(zip(top_lines, bottom_lines, strict=True)):
        page = doc.new_page(width=595, height=842)
        if head:
            page.insert_text((150, top_y), head, fontname="helv", fontsize=9)
        for i in range(6):
            page.insert_textbox((90, 160 + 90 * i, 505, 240 + 90 * i), f"{n + 1}.{i} {BODY}", fontname="helv", fontsize=10)
        if foot:
            page.insert_text((90, 800), foot, fontname="helv", fontsize=9)
    return doc.tobytes()


def test_alternating_running_heads_below_the_top_zone_are_furniture():
    heads = ["Résumés de logs de requêtes OLAP", "J. Aligon et al."] * 3
    layers = _layers(_pages(heads, [""] * 6))
    assert set(heads) <= layers["furniture"]
    assert not set(heads) & layers["body"]


def test_a_footer_with_roman_page_numbers_on_either_side_is_furniture():
    feet = ["xiv PREFACE", "PREFACE xv", "xvi PREFACE", "PREFACE xvii"]
    layers = _layers(_pages([""] * 4, feet))
    assert set(feet) <= layers["furniture"]


def test_titles_that_differ_only_in_their_figures_stay_text():
    titles = [f"Exhibit 2.3.59-{n} (01-19-2021) Command Code BMFOL Return Form 1120 Display" for n in (42, 58, 64, 65)]
    layers = _layers(_pages(titles, [""] * 4))
    assert set(titles) <= layers["body"]


def test_a_blank_page_notice_is_furniture_not_a_section():
    """A manual's heading paths ran "… › This Page Intentionally Left Blank › LINE POSITION …":
    the notice, set large on its own page, was taken for a heading."""
    doc = pymupdf.open()
    first = doc.new_page(width=595, height=842)
    first.insert_text((90, 120), "Terminal Responses", fontname="hebo", fontsize=16)
    first.insert_textbox((90, 140, 505, 300), BODY, fontname="helv", fontsize=10)
    blank = doc.new_page(width=595, height=842)
    blank.insert_text((150, 400), "This Page Intentionally Left Blank", fontname="hebo", fontsize=16)
    third = doc.new_page(width=595, height=842)
    third.insert_text((90, 120), "Line Position Description", fontname="hebo", fontsize=16)
    third.insert_textbox((90, 140, 505, 300), BODY, fontname="helv", fontsize=10)
    document = convert_pdf(doc.tobytes(), source="manual.pdf").document
    notice = next(item for item in document.texts if item.text == "This Page Intentionally Left Blank")
    assert notice.content_layer == ContentLayer.FURNITURE
    headings = [item.text for item in document.texts if item.label.value == "section_header"]
    assert headings == ["Terminal Responses", "Line Position Description"]


def test_the_author_the_metadata_names_is_not_a_section_heading():
    """A book's cover sets its author's name large ("LAWRENCE LESSIG"): every heading path of
    the book ran "Free Culture › LAWRENCE LESSIG › PREFACE"."""
    doc = pymupdf.open()
    cover = doc.new_page(width=595, height=842)
    cover.insert_text((90, 150), "FREE TIDES", fontname="hebo", fontsize=28)
    cover.insert_text((90, 700), "ANNA KOWALSKA", fontname="hebo", fontsize=18)
    page = doc.new_page(width=595, height=842)
    page.insert_text((90, 120), "PREFACE", fontname="hebo", fontsize=16)
    page.insert_textbox((90, 140, 505, 300), BODY, fontname="helv", fontsize=10)
    doc.set_metadata({"author": "Anna Kowalska", "title": "Free Tides"})
    document = convert_pdf(doc.tobytes(), source="book.pdf").document
    headings = [item.text for item in document.texts if item.label.value == "section_header"]
    assert "PREFACE" in headings and "ANNA KOWALSKA" not in headings
    assert any(item.text == "ANNA KOWALSKA" for item in document.texts)  # kept as text
