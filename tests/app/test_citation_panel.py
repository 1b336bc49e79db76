"""The citation panel on its own: multi-page citations, page navigation, fit-width and a citation whose context lies on an earlier page."""

from __future__ import annotations

import pdf_factory
import pytest
from PySide6.QtWidgets import QApplication
from qt_helpers import run_until

from haiku.rag.citations import Citation
from haiku.rag.ingest.records import Box
from haiku_desk.services.library import uri_for
from haiku_desk.services.pages import PagesService
from haiku_desk.views.citation_panel import CitationPanel, cited_pages

SLOW = 180


@pytest.fixture
def pages(library, notifications):
    service = PagesService(library, notifications)
    yield service
    service.close()


@pytest.fixture
def panel(qtbot, pages):
    panel = CitationPanel(pages)
    panel.open_in_system_viewer = False
    qtbot.addWidget(panel)
    panel.resize(500, 700)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def _ingest(qloop, library, path):
    library.add_paths([path])
    run_until(qloop, lambda: (e := library.entry(uri_for(path))) is not None and (e.searchable or e.reason), SLOW)
    return library.entry(uri_for(path))


def _citation(entry, boxes, context=(), content="passage", pages=()):
    return Citation(
        index=3,
        chunk_id="c1",
        document_id=entry.document_id,
        document_uri=entry.key,
        document_title=entry.name,
        content=content,
        headings=["2 Results", "2.1 Discussion"],
        page_numbers=list(pages) or sorted({b.page for b in boxes}),
        boxes=list(boxes),
        context_boxes=list(context),
    )


def test_multi_page_citation_navigation_and_fit_width(qloop, library, panel, tmp_path):
    layout = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, layout.path)
    p_intro = Box(1, *layout.block("p_intro").rect)
    p_results = Box(2, *layout.block("p_results").rect)
    citation = _citation(entry, [p_results, p_intro], context=[Box(3, *layout.block("p_appendix").rect)])
    assert cited_pages(citation) == [1, 2, 3]

    shown = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(citation)
    run_until(qloop, lambda: bool(shown))
    assert shown == [1] and "[3]" in panel.title.text() and "2.1 Discussion" in panel.headings.text()
    assert panel.page_label.text().endswith("· cited") and not panel.prev_button.isEnabled()
    # fit width: the page fills the viewport's width
    assert abs(panel.current_image.deviceIndependentSize().width() - panel._available_width()) <= 2

    panel.next_button.click()
    run_until(qloop, lambda: len(shown) == 2)
    assert shown[-1] == 2 and panel.page_count == 3
    panel.resize(700, 700)  # fit-width follows the panel's size
    run_until(qloop, lambda: len(shown) == 3)
    assert abs(panel.current_image.deviceIndependentSize().width() - panel._available_width()) <= 2
    panel.go_to_page(9)  # outside the document: ignored
    assert panel.page == 2


def test_pages_of_other_sizes_are_fitted_to_the_width_when_first_shown(qloop, library, panel, tmp_path):
    """Fitting needs a page's width before it is drawn: a book-sized scan (not A4, the guess)
    and then a wide page of the same document each fill the panel's width at once."""
    import pymupdf

    path = tmp_path / "sizes.pdf"
    with pymupdf.open() as doc:
        narrow = doc.new_page(width=300, height=420)
        narrow.insert_text((36, 72), "Otters juggle river stones at dusk.", fontsize=11)
        wide = doc.new_page(width=900, height=400)
        wide.insert_text((36, 72), "Herons stand still in the shallows.", fontsize=11)
        doc.save(path)
    entry = _ingest(qloop, library, path)
    shown = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(_citation(entry, [Box(1, 36, 60, 240, 76)]))
    run_until(qloop, lambda: bool(shown))

    def fills_width() -> bool:
        return abs(panel.current_image.deviceIndependentSize().width() - panel._available_width()) <= 2

    assert shown == [1] and fills_width()
    panel.next_button.click()
    run_until(qloop, lambda: len(shown) == 2)
    assert shown[-1] == 2 and fills_width()


def test_context_before_the_match_opens_on_the_matched_page(qloop, library, panel, tmp_path):
    layout = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, layout.path)
    citation = _citation(entry, [Box(2, *layout.block("p_discussion").rect)], context=[Box(1, *layout.block("p_intro").rect)])
    shown = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(citation)
    run_until(qloop, lambda: bool(shown))
    assert shown == [2]


def test_an_emptied_panel_has_no_scroll_bars_when_the_window_narrows(qloop, qtbot, library, panel, tmp_path):
    layout = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, layout.path)
    shown = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(_citation(entry, [Box(1, *layout.block("p_intro").rect)]))
    run_until(qloop, lambda: bool(shown))
    panel.follow_conversation(None)  # a new chat (Ctrl+N): the panel goes back to its hint
    panel.resize(300, 420)  # then the window is made small (a 1024x640 window's panel)
    qtbot.waitUntil(lambda: panel.scroll.viewport().width() < 300)
    for _ in range(3):
        QApplication.processEvents()
    assert panel.citation is None
    assert not panel.scroll.horizontalScrollBar().isVisible()
    assert not panel.scroll.verticalScrollBar().isVisible()
