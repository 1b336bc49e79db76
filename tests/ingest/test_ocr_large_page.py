"""A large scanned page with a little text on it (ocrmypdf's "hugemono": one 8400 pt page, a
35,000 px image, one line of text). Its 4000 x 4000 render went to the detector as one 16 Mpx
input, which peaked at 2.4 GB of address space: after session 14's working-resolution probe
the parse worker's memory limit refused it (std::bad_alloc) and the page was stored as "OCR
recognised no text". A large image is now detected in strips of a bounded size, blank strips
skipped, and the page reports progress while its work moves on.

The page here is smaller than hugemono's (1600 x 2400 px at 150 dpi) with the strip size
lowered to match, so the test runs the same code path for a few CPU-seconds."""

from __future__ import annotations

import io

import pymupdf
import pytest
from PIL import Image

from haiku.rag.ingest import ocr
from haiku.rag.ingest.pdf import convert_pdf
from haiku.rag.operations import Stage

DPI = 150
SIZE = (1600, 2400)  # pixels at DPI
STRIP_PIXELS = 1_000_000  # strips of 1024 rows (the minimum) x 1600 px
TOP_LINE = "A very large page with a tiny amount of text"
BOUNDARY_LINE = "Another line drawn across two strips"


def _line_image(text: str) -> Image.Image:
    doc = pymupdf.open()
    page = doc.new_page(width=320, height=24)
    page.insert_text((4, 17), text, fontsize=13, fontname="helv")
    image = Image.open(io.BytesIO(page.get_pixmap(dpi=DPI).tobytes("png"))).convert("L")
    doc.close()
    return image


def _large_scan() -> bytes:
    """One page, SIZE pixels at DPI, all of it one image: white, with one line near the top
    and one centred on the rows where two detection strips overlap (the strips start at
    rows 0, 768 and 1376, so the first two overlap on rows 768-1024)."""
    sheet = Image.new("L", SIZE, 255)
    sheet.paste(_line_image(TOP_LINE), (150, 290))
    boundary = _line_image(BOUNDARY_LINE)
    sheet.paste(boundary, (300, 896 - boundary.height // 2))
    encoded = io.BytesIO()
    sheet.save(encoded, format="PNG")
    doc = pymupdf.open()
    page = doc.new_page(width=SIZE[0] * 72 / DPI, height=SIZE[1] * 72 / DPI)
    page.insert_image(page.rect, stream=encoded.getvalue())
    data = doc.tobytes()
    doc.close()
    return data


@pytest.fixture
def detector_inputs(monkeypatch):
    """The real detector, with the shape of every image given to it recorded."""
    engine = ocr._load_engine()
    shapes: list[tuple[int, int]] = []
    detect = engine.text_det

    def recording(image):
        shapes.append(image.shape[:2])
        return detect(image)

    monkeypatch.setattr(engine, "text_det", recording)
    monkeypatch.setattr(ocr, "DET_STRIP_PIXELS", STRIP_PIXELS, raising=False)
    return shapes


def _texts(conversion) -> list[str]:
    return [" ".join(item.text.split()) for item in conversion.document.texts]


def test_a_large_page_is_detected_in_bounded_strips_and_its_text_read(detector_inputs):
    conversion = convert_pdf(_large_scan(), source="large.pdf")
    assert conversion.pages_recognised == [1]
    texts = _texts(conversion)
    # each line read, once (the line across two strips is kept from one of them)
    assert sum(TOP_LINE in t for t in texts) == 1, texts
    assert sum(BOUNDARY_LINE in t for t in texts) == 1, texts
    # the detector never saw the whole page at once: no input above a strip
    # (1024 rows x 1600 px), where the whole page is 3.84 Mpx
    assert detector_inputs
    assert max(h * w for h, w in detector_inputs) <= 1024 * SIZE[0], detector_inputs
    # the blank strip at the bottom (rows 1376-2400) was not detected: the probe, then
    # the two strips with text
    assert len(detector_inputs) == 3, detector_inputs
    # boxes where the lines are, in points (150 dpi: 0.48 pt a pixel)
    item = next(i for i in conversion.document.texts if TOP_LINE in i.text)
    box = item.prov[0].bbox
    assert 150 * 0.48 - 6 <= box.l <= 150 * 0.48 + 12
    assert 290 * 0.48 - 6 <= box.t <= 290 * 0.48 + 20


def test_one_long_page_reports_progress_while_its_work_moves_on(detector_inputs, monkeypatch):
    """One page is minutes of work on a slow machine: the parse worker stops a parse that
    reports nothing for parse_timeout_seconds, so the page's OCR reports as its parts get
    done (a strip detected, a line read), not only when the page is finished. (The reports
    are at most one every couple of seconds; here every part reports.)"""
    from haiku.rag.ingest import pdf

    monkeypatch.setattr(pdf._PageReporter, "WORK_REPORT_SECONDS", 0.0)
    reports = []
    conversion = convert_pdf(_large_scan(), source="large.pdf", progress=reports.append)
    assert conversion.pages_recognised == [1]
    during_page = [p for p in reports if p.stage is Stage.RECOGNISING and p.done == 0]
    # the first report, then at least: the probe, two strips, two lines
    assert len(during_page) >= 1 + 5, reports
    assert all(p.total == 1 for p in during_page)
    assert reports[-1].stage is Stage.RECOGNISING and reports[-1].done == 1
