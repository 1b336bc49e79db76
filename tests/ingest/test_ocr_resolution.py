"""OCR whatever the resolution and the turn of a page: one page rendered at 150 to 1200 dpi
reads the same (issue 32: at 400 dpi and above it was read upside down, as garbage), and a
page turned a quarter turn, by its pixels or by a /Rotate entry, reads its top line first
(issue 29)."""

from __future__ import annotations

import io

import pymupdf
import pytest
from PIL import Image

from haiku.rag.ingest.converters import convert_source
from haiku.rag.ingest.pdf import OcrOptions, convert_pdf

LINES = [
    "First line says alpha and more",
    "Second line says bravo and more",
    "Third line says charlie and more",
    "Fourth line says delta and more",
]
LATER = "A later paragraph named echo"


def _page_image(dpi: int) -> Image.Image:
    """A small page of four lines and a paragraph below them, rendered at ``dpi``."""
    doc = pymupdf.open()
    page = doc.new_page(width=300, height=180)
    for index, text in enumerate(LINES):
        page.insert_text((20, 36 + 16 * index), text, fontsize=12, fontname="helv")
    page.insert_text((20, 140), LATER, fontsize=12, fontname="helv")
    image = Image.open(io.BytesIO(page.get_pixmap(dpi=dpi).tobytes("png"))).convert("RGB")
    doc.close()
    return image


def _scan_pdf(image: Image.Image, *, dpi: float, rotate: int = 0) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=image.width * 72 / dpi, height=image.height * 72 / dpi)
    encoded = io.BytesIO()
    image.save(encoded, format="PNG")
    page.insert_image(page.rect, stream=encoded.getvalue())
    if rotate:
        page.set_rotation(rotate)
    data = doc.tobytes()
    doc.close()
    return data


def _text(conversion) -> str:
    return " ".join(
        " ".join(getattr(item, "text", "").split())
        for item, _ in conversion.document.iterate_items()
    )


def _png_without_resolution(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")  # no pHYs chunk: the wrapper takes it as 150 dpi
    return out.getvalue()


@pytest.mark.parametrize("dpi", [300, 600, 1200])
def test_one_page_scanned_at_any_resolution_reads_as_at_150_dpi(dpi):
    """An image file without a usable resolution is taken as 150 dpi, so a 1200 dpi scan
    becomes a page 8 times too large, rendered with letters 8 times too tall (up to the
    render's size cap): the text must not depend on it."""
    reference = _text(
        convert_source(_png_without_resolution(_page_image(150)), filename="scan-150.png")
    )
    assert all(line in reference for line in LINES)
    conversion = convert_source(_png_without_resolution(_page_image(dpi)), filename=f"scan-{dpi}.png")
    assert conversion.pages_recognised == [1]
    assert _text(conversion) == reference
    # boxes are in the page's own points, wherever the working resolution put the pixels
    page_width = conversion.document.pages[1].size.width
    boxes = [prov.bbox for item, _ in conversion.document.iterate_items() for prov in item.prov]
    assert boxes and all(0 <= b.l < b.r <= page_width for b in boxes)
    first = next(
        prov.bbox
        for item, _ in conversion.document.iterate_items()
        for prov in item.prov
        if getattr(item, "text", "").startswith("First")
    )
    scale = dpi / 150  # the page is this much larger than the 150 dpi page of 300 x 180 pt
    assert first.l == pytest.approx(20 * scale, abs=6 * scale)


def test_a_scan_pdf_rendered_for_ocr_at_400_dpi_reads_as_at_150():
    data = _scan_pdf(_page_image(600), dpi=600)
    at_150 = _text(convert_pdf(data, source="scan.pdf", ocr=OcrOptions(dpi=150)))
    at_400 = _text(convert_pdf(data, source="scan.pdf", ocr=OcrOptions(dpi=400)))
    assert all(line in at_150 for line in LINES)
    assert at_400 == at_150


@pytest.mark.parametrize(
    ("turn", "rotate"),
    [(90, 0), (270, 0), (0, 90), (0, 270), (90, 270), (270, 90)],
)
def test_a_page_turned_a_quarter_turn_reads_its_top_line_first(turn, rotate):
    """``turn``: the scan's pixels turned counter-clockwise; ``rotate``: the page's /Rotate.
    Whichever way the page is shown, its lines read top line first, then the paragraph
    below (with /Rotate 270 they read last line first)."""
    image = _page_image(150).rotate(turn, expand=True)
    conversion = convert_pdf(_scan_pdf(image, dpi=150, rotate=rotate), source="turned.pdf")
    text = _text(conversion)
    positions = [text.find(line) for line in [*LINES, LATER]]
    assert -1 not in positions, text
    assert positions == sorted(positions), text
