"""PagesService: stored pages rendered with PyMuPDF into QImages, off the GUI thread, cached,
still available after the original file is gone; highlights painted where the boxes are."""

from __future__ import annotations

import pdf_factory
import pytest
from qt_helpers import run_until

from haiku.rag.ingest.records import Box
from haiku_desk.services.library import DocumentState, uri_for
from haiku_desk.services.pages import PagesService, paint_highlights

SLOW = 180


@pytest.fixture
def report(qloop, library, tmp_path):
    layout = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    library.add_paths([layout.path])
    run_until(qloop, lambda: (e := library.entry(uri_for(layout.path))) is not None and e.searchable, SLOW)
    return layout, library.entry(uri_for(layout.path)).document_id


def _rgb(image, x, y):
    c = image.pixelColor(int(x), int(y))
    return c.red(), c.green(), c.blue()


def _is_white(rgb):
    return all(v >= 250 for v in rgb)


def _is_highlight(rgb):
    r, g, b = rgb
    return r >= 240 and 200 <= g <= 245 and b <= 190


def test_renders_the_stored_page_after_the_file_is_gone_and_caches_it(qloop, library, notifications, report):
    layout, document_id = report
    layout.path.unlink()  # pages come from the bytes kept in the store
    pages = PagesService(library, notifications)
    try:
        render = qloop.run_until_complete(pages.render(document_id, 2, zoom=2.0))
        assert (render.page, render.page_count) == (2, 3)
        assert (render.width_pt, render.height_pt) == pytest.approx(layout.page_size)
        assert (render.image.width(), render.image.height()) == (1190, 1684)
        # the results heading is drawn on page 2: dark pixels inside its box, white paper around it
        x0, y0, x1, y1 = layout.block("h1_results").rect
        dark = [
            _rgb(render.image, x * 2, y * 2)
            for x in range(int(x0), int(x1))
            for y in range(int(y0), int(y1))
        ]
        assert sum(1 for r, g, b in dark if r < 100) > 20
        assert _is_white(_rgb(render.image, 30, 30))
        assert pages.cached(document_id, 2, 2.0) is render
        assert qloop.run_until_complete(pages.render(document_id, 2, zoom=2.0)) is render
        assert pages.cached(document_id, 3, 2.0) is None
    finally:
        pages.close()


def test_request_answers_with_a_signal_and_bad_pages_fail_cleanly(qloop, library, notifications, report):
    _, document_id = report
    pages = PagesService(library, notifications)
    ready, failed = [], []
    pages.page_ready.connect(lambda rid, r: ready.append((rid, r.page)))
    pages.page_failed.connect(lambda rid, msg: failed.append((rid, msg)))
    try:
        good = pages.request(document_id, 1, 1.0)
        bad = pages.request(document_id, 9, 1.0)
        run_until(qloop, lambda: ready and failed)
        assert ready == [(good, 1)]
        assert failed[0][0] == bad and "outside the document" in failed[0][1]
    finally:
        pages.close()


def test_highlights_are_painted_inside_the_boxes_only(qloop, library, notifications, report):
    layout, document_id = report
    pages = PagesService(library, notifications)
    try:
        render = qloop.run_until_complete(pages.render(document_id, 1, zoom=1.5))
        x0, y0, x1, y1 = layout.block("p_intro").rect
        cx0, cy0, cx1, cy1 = layout.block("p_background").rect
        image = paint_highlights(render, [Box(1, x0, y0, x1, y1)], [Box(1, cx0, cy0, cx1, cy1), Box(2, 0, 0, 595, 842)])
        z = render.zoom
        inside = [_rgb(image, x * z, y * z) for x in range(int(x0), int(x1), 3) for y in range(int(y0), int(y1))]
        assert sum(map(_is_highlight, inside)) > 0.5 * len(inside)
        context = [_rgb(image, x * z, y * z) for x in range(int(cx0), int(cx1), 3) for y in range(int(cy0), int(cy1))]
        faint = [rgb for rgb in context if not _is_white(rgb) and rgb[0] > 240]
        assert len(faint) > 0.5 * len(context) and not any(_is_highlight(rgb) for rgb in context)
        assert _is_white(_rgb(image, (x1 + 20) * z if x1 + 20 < 595 else 5, y0 * z))
        assert _is_white(_rgb(image, 10, 10))  # the page-2 box is not painted on page 1
        original_inside = [_rgb(render.image, x * z, y * z) for x in range(int(x0), int(x1), 3) for y in range(int(y0), int(y1))]
        assert not any(map(_is_highlight, original_inside))
    finally:
        pages.close()


def test_original_file_comes_back_from_the_store_when_the_source_moved(qloop, library, notifications, report):
    layout, document_id = report
    pages = PagesService(library, notifications)
    try:
        assert qloop.run_until_complete(pages.original_path(document_id)) == layout.path
        data = layout.path.read_bytes()
        layout.path.unlink()
        copy = qloop.run_until_complete(pages.original_path(document_id))
        assert copy != layout.path and copy.read_bytes() == data and copy.name == "report.pdf"
    finally:
        pages.close()
    assert library.entry(uri_for(layout.path)).state in (DocumentState.TEXT, DocumentState.EMBEDDING, DocumentState.HYBRID)


def test_the_app_and_the_library_paint_the_same_highlighted_page(qloop, library, notifications, report):
    """One renderer: the citation panel's page (PagesService + paint_highlights) and the CLI's
    ``visualize`` PNG (haiku.rag's render_page) are the same pixels for the same boxes."""
    import numpy as np

    layout, document_id = report
    matched = [Box(1, *layout.block("p_intro").rect)]
    context = [Box(1, *layout.block("p_background").rect)]
    pages = PagesService(library, notifications)
    try:
        render = qloop.run_until_complete(pages.render(document_id, 1, zoom=1.5))
        image = paint_highlights(render, matched, context)
    finally:
        pages.close()
    (page,) = qloop.run_until_complete(library.client.visualize(document_id, matched, context, dpi=1.5 * 72))
    library_rgb = page.highlighted_rgb()

    image = image.convertToFormat(image.Format.Format_RGB888)
    stride = image.bytesPerLine()
    app_rows = np.frombuffer(image.constBits(), np.uint8, count=stride * image.height())
    app_rgb = app_rows.reshape(image.height(), stride)[:, : image.width() * 3].reshape(image.height(), image.width(), 3)
    assert app_rgb.shape == library_rgb.shape
    assert (app_rgb != np.frombuffer(page.samples, np.uint8).reshape(app_rgb.shape)).any()  # highlighted
    assert np.array_equal(app_rgb, library_rgb)


def test_find_folds_accents_and_reads_a_glyph_accent_with_its_letter():
    """Tester 20:26: in tracemonkey the page draws "naïve" as n a ¨ ı v e (TeX's spacing
    diaeresis over a dotless i); Find said "No matches" for "naïve" and for "naive". Find
    folds case and accents on both sides and reads a spacing accent with its letter; each
    match is one rectangle per line it spans, where its characters are."""
    import pymupdf

    from haiku_desk.services.pages import _RenderThread, find_fold

    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    page.insert_text((40, 60), "In a na\u00a8ive implementation, inner loops", fontname="helv", fontsize=12)
    page.insert_text((40, 90), "A NA\u00cfVE reading of K\u00e9r\u00e9on.", fontname="helv", fontsize=12)
    data = doc.tobytes()
    assert find_fold("na\u00a8\u0131ve") == find_fold("Na\u00efve") == "naive"

    hits = _RenderThread.find(data, "naïve")
    assert [(h.page, round(h.y0) < 60 < round(h.y1)) for h in hits][:1] == [(1, True)] and len(hits) == 2
    assert 40 < hits[0].x0 < hits[0].x1 < 200  # the word's own place on the first line
    assert len(_RenderThread.find(data, "naive")) == 2
    assert len(_RenderThread.find(data, "kereon")) == 1
    assert len(_RenderThread.find(data, "inner loops")) == 1
    assert _RenderThread.find(data, "naivety") == []
