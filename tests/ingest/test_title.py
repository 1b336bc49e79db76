"""Document titles from the first page's title block (ingest/pdf/title.py), on PDFs generated
with PyMuPDF: running headers, "Table of Contents", "Front cover" and numbered sections are
skipped, a wrapped title is read whole, metadata counts only when the page agrees with it."""

from __future__ import annotations

import pymupdf

from haiku.rag.ingest.pdf import convert_pdf

BODY = (
    "The survey covered forty-two orchards along the river terraces, where growers recorded "
    "soil moisture each morning before irrigation and again at dusk during the dry season."
)


def _pdf(
    *,
    title_lines: tuple[str, ...] = (),
    title_size: float = 22,
    top_lines: tuple[tuple[str, float], ...] = (),
    header: str | None = None,
    pages: int = 3,
    metadata_title: str | None = None,
    body: str = BODY,
) -> bytes:
    """A small document: an optional running header on every page, some lines at the top of
    page 1 (``top_lines``: text, size), the title lines, then body paragraphs."""
    doc = pymupdf.open()
    for number in range(1, pages + 1):
        page = doc.new_page(width=595, height=842)
        if header is not None:
            page.insert_text((72, 40), f"{header}    {number}", fontname="helv", fontsize=9)
        y = 90.0
        if number == 1:
            for text, size in top_lines:
                page.insert_text((72, y), text, fontname="hebo", fontsize=size)
                y += size * 1.6
            for line in title_lines:
                page.insert_text((72, y + title_size), line, fontname="hebo", fontsize=title_size)
                y += title_size * 1.25
            y += 40
        for _ in range(6):
            for i in range(0, len(body), 90):
                page.insert_text((72, y), body[i : i + 90], fontname="helv", fontsize=10)
                y += 13
            y += 10
    if metadata_title is not None:
        doc.set_metadata({"title": metadata_title})
    data = doc.tobytes()
    doc.close()
    return data


def _title(data: bytes, name: str = "orchard-survey-2024.pdf") -> str | None:
    return convert_pdf(data, source=name).title


def test_the_big_title_wins_over_a_running_header_and_a_table_of_contents():
    data = _pdf(
        header="Orchard Survey Series · Working Paper",
        top_lines=(("Table of Contents", 14), ("Front cover", 12)),
        title_lines=("Soil Moisture in River Terrace Orchards",),
    )
    assert _title(data) == "Soil Moisture in River Terrace Orchards"


def test_a_title_wrapped_over_two_lines_is_read_whole():
    data = _pdf(title_lines=("A Perspective on Soil Moisture", "in River Terrace Orchards"))
    assert _title(data) == "A Perspective on Soil Moisture in River Terrace Orchards"


def test_a_numbered_section_is_not_a_title_and_the_file_name_is_used():
    # a one-page excerpt that starts with a section: no title block, no metadata
    data = _pdf(title_lines=("5.1 Hyper Parameter Optimization",), title_size=14, pages=1)
    assert _title(data) is None  # the pipeline falls back to the file name


def test_only_contents_and_cover_labels_give_no_title():
    data = _pdf(top_lines=(("Table of Contents", 20), ("Front cover", 18)))
    assert _title(data) is None


def test_metadata_from_another_document_is_ignored():
    data = _pdf(metadata_title="Quarterly Tungsten Prices on the Canal Exchange")
    assert _title(data) is None  # the page does not agree; the file name it is
    with_title = _pdf(
        title_lines=("Soil Moisture in River Terrace Orchards",),
        metadata_title="Quarterly Tungsten Prices on the Canal Exchange",
    )
    assert _title(with_title) == "Soil Moisture in River Terrace Orchards"


def test_metadata_is_used_when_the_page_agrees_and_has_no_title_block():
    data = _pdf(metadata_title="Orchard Survey: Soil Moisture Terraces")
    # "orchard", "survey", "soil", "moisture", "terraces": on the page or in the file name
    assert _title(data) == "Orchard Survey: Soil Moisture Terraces"
    junk = _pdf(metadata_title="Microsoft Word - Document1.docx")
    assert _title(junk) is None


def test_a_running_header_of_a_one_page_excerpt_is_not_its_title():
    data = _pdf(header="Journal of Orchard Science 12 (2024)", pages=1)
    assert _title(data) is None
