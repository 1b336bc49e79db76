"""The reader (issue 34): zoom that keeps the highlight in view, every citation opened fitted
and at its passage, text sources read as text, a removed document's citation, find-in-document
and "Open original" without a viewer. Real widgets offscreen, real PDFs and Office files,
real LanceDB in a temporary folder."""

from __future__ import annotations

import asyncio

import office_factory
import pdf_factory
import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from qt_helpers import run_until

from app.main_window_helpers import open_main_window
from haiku.rag.citations import Citation
from haiku.rag.ingest.records import Box
from haiku_desk.services.library import uri_for
from haiku_desk.services.pages import PagesService
from haiku_desk.views.citation_panel import CitationPanel
from haiku_desk.views.text_reader import PASSAGE_COLOUR

SLOW = 180


@pytest.fixture
def pages(library, notifications):
    service = PagesService(library, notifications)
    yield service
    service.close()


def _panel(qtbot, pages, **kwargs) -> CitationPanel:
    panel = CitationPanel(pages, **kwargs)
    qtbot.addWidget(panel)
    panel.resize(520, 720)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


@pytest.fixture
def panel(qtbot, pages):
    panel = _panel(qtbot, pages)
    panel.open_in_system_viewer = False
    return panel


def _ingest(qloop, library, path):
    library.add_paths([path])
    run_until(qloop, lambda: (e := library.entry(uri_for(path))) is not None and (e.searchable or e.reason), SLOW)
    entry = library.entry(uri_for(path))
    assert entry.searchable, entry.reason
    return entry


def _citation(entry, boxes, content="passage", index=1):
    return Citation(
        index=index,
        chunk_id=f"c{index}",
        document_id=entry.document_id,
        document_uri=entry.key,
        document_title=entry.name,
        content=content,
        page_numbers=sorted({b.page for b in boxes}),
        boxes=list(boxes),
    )


def _highlight_in_viewport(panel: CitationPanel, box: Box) -> QRect:
    """Where ``box`` is drawn, in the page view's viewport pixels (from the shown page's image
    and where its label sits: the same measure for any layout of the panel)."""
    label = panel.image_label
    origin = label.mapTo(panel.scroll.viewport(), QPoint(0, 0))
    zoom = panel.current_render.zoom / panel.devicePixelRatioF()
    return QRect(
        origin.x() + int(box.x0 * zoom), origin.y() + int(box.y0 * zoom),
        int((box.x1 - box.x0) * zoom), int((box.y1 - box.y0) * zoom),
    )


def _assert_in_view(panel: CitationPanel, box: Box) -> None:
    viewport = panel.scroll.viewport().rect()
    highlight = _highlight_in_viewport(panel, box)
    assert viewport.contains(highlight.topLeft()), (highlight, viewport)
    if highlight.width() <= viewport.width() and highlight.height() <= viewport.height():
        assert viewport.contains(highlight), (highlight, viewport)


def test_zoom_keeps_the_highlight_inside_the_viewport(qloop, library, panel, tmp_path):
    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, report.path)
    cited = Box(2, *report.block("p_discussion").rect)
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(_citation(entry, [cited]))
    run_until(qloop, lambda: bool(shown))
    _assert_in_view(panel, cited)
    for presses in range(1, 4):  # "+" three times used to jump to the page's top-left corner
        width = panel.current_image.width()
        panel.zoom_in_button.click()
        run_until(qloop, lambda n=presses: len(shown) == n + 1)
        assert panel.page == 2 and panel.current_image.width() > width
        _assert_in_view(panel, cited)
    panel.zoom_out_button.click()
    run_until(qloop, lambda: len(shown) == 5)
    _assert_in_view(panel, cited)


def test_a_new_citation_opens_fitted_to_the_width_at_its_passage(qloop, library, panel, tmp_path):
    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, report.path)
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(_citation(entry, [Box(1, *report.block("p_intro").rect)]))
    run_until(qloop, lambda: bool(shown))
    fitted = panel.current_image.width()
    for presses in range(1, 4):
        panel.zoom_in_button.click()
        run_until(qloop, lambda n=presses: len(shown) == n + 1)
    assert panel.current_image.width() > fitted and not panel.fit_button.isChecked()

    cited = Box(2, *report.block("p_discussion").rect)
    panel.show_citation(_citation(entry, [cited], index=2))  # the zoom does not carry over
    run_until(qloop, lambda: shown[-1] == 2)
    assert panel.fit_button.isChecked()
    assert abs(panel.current_image.deviceIndependentSize().width() - panel._available_width()) <= 2
    _assert_in_view(panel, cited)
    assert panel.scroll.verticalScrollBar().value() > 0  # scrolled down to it, page 2


def _long_markdown(path):
    filler = "\n\n".join(
        f"## Section {i}\n\nParagraph {i} talks about ordinary weather and nothing else of note." for i in range(40)
    )
    path.write_text(
        f"# Field notes\n\n{filler}\n\n## Otters\n\n"
        "Riverbank otters *juggle* smooth stones beside the willow roots at dusk, "
        "then stash them under the moss.\n"
    )
    return path


def _long_html(path):
    filler = "".join(f"<h2>Section {i}</h2><p>Paragraph {i} talks about ordinary weather.</p>" for i in range(40))
    path.write_text(
        f"<html><head><title>Field notes</title></head><body><h1>Field notes</h1>{filler}"
        "<h2>Otters</h2><p>Riverbank otters <b>juggle</b> smooth stones beside the willow roots at dusk, "
        "then stash them under the moss.</p></body></html>"
    )
    return path


def _docx(path):
    return office_factory.make_docx(path)


@pytest.mark.parametrize(
    ("name", "make", "query", "words"),
    [
        ("notes.md", _long_markdown, "otters juggle smooth stones willow", "otters juggle smooth stones"),
        ("notes.html", _long_html, "otters juggle smooth stones willow", "otters juggle smooth stones"),
        ("notes.docx", _docx, "otters hunt crayfish willow roots", "otters hunt crayfish"),
    ],
)
def test_a_text_source_shows_its_text_with_the_passage_highlighted_and_no_page_controls(
    qloop, library, panel, tmp_path, name, make, query, words
):
    path = make(tmp_path / name)
    entry = _ingest(qloop, library, path)
    hits = qloop.run_until_complete(library.search_passages(query, limit=1))
    citation = Citation.from_result(2, hits[0].chunk_id, hits[0])
    kinds: list[str] = []
    panel.document_shown.connect(kinds.append)
    panel.show_citation(citation)
    run_until(qloop, lambda: bool(kinds))
    reader = panel.text_reader
    assert kinds == ["text"] and reader.isVisible() and panel.scroll is reader
    assert words in " ".join(reader.passage_text().split()).casefold()
    highlights = [s for s in reader.extraSelections() if s.format.background().color() == PASSAGE_COLOUR]
    assert len(highlights) == 1 and highlights[0].cursor.selectedText() == reader.passage_text().replace("\n", "\u2029")
    assert reader.passage_in_view()
    # no page controls, no page in the header, nothing about pages
    page_controls = (panel.prev_button, panel.page_label, panel.next_button, panel.zoom_out_button,
                     panel.zoom_in_button, panel.fit_button)
    assert not any(w.isVisible() for w in page_controls) and panel.find_action.isEnabled()
    assert "p." not in panel.title.suffix and "pages" not in panel.message_text()
    assert entry.name in panel.title.full_text or "Field notes" in panel.title.full_text or "Otter" in panel.title.full_text
    assert not panel.snippet.isVisible()  # the passage is highlighted in the text itself


def test_a_citation_of_a_removed_document_says_so_and_keeps_the_quote(qloop, library, panel, tmp_path):
    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, report.path)
    hits = qloop.run_until_complete(library.search_passages("kerosene shortage night convoys", limit=1))
    citation = Citation.from_result(5, hits[0].chunk_id, hits[0])
    library.delete([entry.key])
    run_until(qloop, lambda: library.entry(entry.key) is None, SLOW)

    kinds: list[str] = []
    panel.document_shown.connect(kinds.append)
    panel.show_citation(citation)
    run_until(qloop, lambda: bool(kinds))
    text = " ".join(panel.message_text().split())
    assert kinds == ["removed"] and panel.message.isVisible()
    assert "This document was removed from the library" in text
    assert "kerosene shortage" in text  # the quote is kept
    assert "no document with id" not in text
    assert not panel.nav.isVisible() and not panel.open_button.isVisible()


def _otter_pdf(path):
    import pymupdf

    with pymupdf.open() as doc:
        for words in (["Otters swim.", "Herons wade.", "An otter dives."], ["Nothing here but reeds."], ["The otter sleeps."]):
            page = doc.new_page(width=595, height=842)
            for i, line in enumerate(words):
                page.insert_text((72, 100 + 200 * i), line, fontsize=12)
        doc.save(path)
    return path


def test_find_in_document_moves_between_matches(qloop, qtbot, library, panel, tmp_path):
    entry = _ingest(qloop, library, _otter_pdf(tmp_path / "otters.pdf"))
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    panel.show_document(entry.document_id, entry.name)
    run_until(qloop, lambda: bool(shown))
    panel.scroll.setFocus()
    qtbot.keyClick(panel.scroll, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    bar = panel.find_bar
    assert bar.isVisible() and bar.edit.hasFocus()
    qtbot.keyClicks(bar.edit, "otter")
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)  # searches at once
    run_until(qloop, lambda: bar.count.text() == "1 of 3", SLOW)
    reader = panel.reader

    def current_hit_marked() -> bool:
        hit = reader.find_hits[reader.find_index]
        drawn = reader.drawn.get(hit.page)
        if drawn is None:
            return False
        _key, render, image = drawn
        z = render.zoom
        point = (int((hit.x0 + hit.x1) / 2 * z), int((hit.y0 + hit.y1) / 2 * z))
        return image.pixelColor(*point) != render.image.pixelColor(*point)

    def visible(rect: QRect) -> bool:
        return reader.view_rect().contains(rect)

    assert reader.find_hits[0].page == 1 and current_hit_marked()
    for expected_text, expected_page in (("2 of 3", 1), ("3 of 3", 3)):
        qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
        assert bar.count.text() == expected_text and reader.find_hits[reader.find_index].page == expected_page
        run_until(qloop, current_hit_marked)
        assert visible(reader.find_hit_rect()) and panel.page == expected_page
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)  # wraps around
    assert bar.count.text() == "1 of 3"
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)  # back
    assert bar.count.text() == "3 of 3" and panel.page == 3
    qtbot.keyClick(bar.edit, Qt.Key.Key_Escape)
    assert not bar.isVisible() and reader.find_hits == []


def test_find_in_a_text_source_moves_between_matches(qloop, qtbot, library, panel, tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nOtters swim.\n\nHerons wade.\n\nThe otter sleeps; another otter dives.\n")
    entry = _ingest(qloop, library, path)
    kinds: list[str] = []
    panel.document_shown.connect(kinds.append)
    panel.show_document(entry.document_id, entry.name)
    run_until(qloop, lambda: bool(kinds))
    panel.open_find()
    bar = panel.find_bar
    qtbot.keyClicks(bar.edit, "otter")
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
    assert bar.count.text() == "1 of 3"
    qtbot.keyClick(bar.edit, Qt.Key.Key_F3)
    reader = panel.text_reader
    start, end = reader.find_hits[reader.find_index]
    assert bar.count.text() == "2 of 3" and reader.toPlainText()[start:end].casefold() == "otter"
    assert start == reader.toPlainText().index("otter sleeps")


def test_open_original_without_a_viewer_says_so(qloop, qtbot, library, pages, tmp_path):
    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, report.path)
    asked: list[str] = []

    def no_viewer(url) -> bool:  # what QDesktopServices.openUrl answers with no application
        asked.append(url.toLocalFile())
        return False

    panel = _panel(qtbot, pages, open_url=no_viewer)
    panel.show_citation(_citation(entry, [Box(1, *report.block("p_intro").rect)]))
    panel.open_button.click()
    run_until(qloop, lambda: bool(asked), SLOW)
    assert asked == [str(report.path)]
    assert panel.notice.isVisible()
    assert "No application on this computer opens PDF files" in panel.notice.text()
    assert str(report.path) in panel.notice.text()


def test_reader_mode_gives_the_reader_the_room_and_gives_it_back(qloop, qtbot, services):
    from PySide6.QtCore import QSettings

    from haiku_desk.views.main_window import MainWindow

    window = MainWindow(services)
    qtbot.addWidget(window)
    window.citation_panel.open_in_system_viewer = False
    window.resize(1440, 900)
    window.show()
    qtbot.waitExposed(window)
    before = window.splitter.sizes()
    panel, splitter = window.citation_panel, window.splitter

    assert window.reader_action.shortcut().toString() == "Ctrl+Shift+R"
    window.reader_action.trigger()  # View › Reader mode
    assert window.reader_mode.active and panel.reader_button.isChecked() and window.reader_action.isChecked()
    assert not window.pane_visible("library") and not window.pane_visible("conversations")
    assert panel.width() >= 0.55 * splitter.width() > before[2]
    # the user's own share is remembered (a drag of the splitter)
    splitter.setSizes([0, splitter.width() // 2, splitter.width() // 2])
    splitter.splitterMoved.emit(splitter.width() // 2, 2)
    share = float(QSettings().value("main_window/reader_share"))
    assert 0.45 <= share <= 0.55

    panel.reader_button.click()  # back: every pane as it was, none remembered as hidden
    assert not window.reader_mode.active and window.pane_visible("library") and window.pane_visible("conversations")
    assert splitter.sizes() == before
    assert QSettings().value("main_window/show_library", True, type=bool)
    panel.reader_button.click()  # again: the share the user left
    assert abs(panel.width() / splitter.width() - share) < 0.05


def test_ctrl_f_in_the_window_finds_in_the_document_the_reader_shows(qloop, qtbot, services, tmp_path):
    from haiku_desk.views.main_window import MainWindow

    window = MainWindow(services)
    qtbot.addWidget(window)
    window.citation_panel.open_in_system_viewer = False
    window.resize(1440, 900)
    window.show()
    qtbot.waitExposed(window)
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nOtters swim.\n\nThe otter sleeps.\n")
    entry = _ingest(qloop, services.library, path)
    panel = window.citation_panel
    kinds: list[str] = []
    panel.document_shown.connect(kinds.append)
    window.show_document(entry.document_id, entry.name)
    run_until(qloop, lambda: bool(kinds))
    assert window.find_action.shortcut().toString() == "Ctrl+F" and window.find_action in window.menuBar().actions()[1].menu().actions()
    window.chat_pane.input.setFocus()  # the focus elsewhere: the key still finds in the document
    window.find_action.trigger()
    assert panel.find_bar.isVisible()
    qtbot.keyClicks(panel.find_bar.edit, "otter")
    qtbot.keyClick(panel.find_bar.edit, Qt.Key.Key_Return)
    assert panel.find_bar.count.text() == "1 of 2"


def test_widening_the_reader_keeps_the_passage_where_it_was(qloop, library, panel, tmp_path):
    """Reader mode widens the panel: the fitted page grows, the passage must not slide away."""
    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, report.path)
    cited = Box(2, *report.block("p_discussion").rect)
    panel.resize(320, 700)
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(_citation(entry, [cited]))
    run_until(qloop, lambda: bool(shown) and panel.current_image.width() <= 320)
    before = _highlight_in_viewport(panel, cited).top()
    panel.resize(960, 700)
    run_until(qloop, lambda: panel.current_image.width() > 600)
    assert abs(_highlight_in_viewport(panel, cited).top() - before) <= 2
    _assert_in_view(panel, cited)


def test_the_hint_wraps_and_the_heading_path_has_its_own_line(qloop, library, panel, tmp_path):
    from haiku_desk.views.citation_panel import HINT, READ_HINT

    panel.resize(260, 600)  # a narrow panel: one-line labels used to clip the hint
    qloop.run_until_complete(asyncio.sleep(0))
    assert panel.message.isVisible() and HINT in panel.message_text() and READ_HINT in panel.message_text()
    assert not panel.title.isVisible()

    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, report.path)
    citation = _citation(entry, [Box(2, *report.block("p_discussion").rect)])
    citation = citation.model_copy(update={"headings": ["3 Discussion", "3.1 Night convoys and the kerosene shortage"]})
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(citation)
    run_until(qloop, lambda: bool(shown))
    inner = panel.width() - 12
    assert panel.title.isVisible() and panel.headings.isVisible()
    assert panel.headings.width() >= inner - 2  # the whole width, not squeezed beside the buttons
    assert panel.headings.geometry().bottom() <= panel.copy_button.geometry().top()


def _settle(qloop, rounds: int = 3) -> None:
    from PySide6.QtWidgets import QApplication

    for _ in range(rounds):
        QApplication.processEvents()
        qloop.run_until_complete(asyncio.sleep(0))


def test_fit_follows_the_viewport_when_the_reader_narrows(qloop, library, panel, tmp_path):
    """With Fit on, a narrower window fits the page to the new width: no page cut off at its
    old width behind a horizontal scroll bar."""
    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, report.path)
    panel.resize(900, 700)
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(_citation(entry, [Box(2, *report.block("p_discussion").rect)]))
    run_until(qloop, lambda: bool(shown) and panel.current_image.width() > 700)
    reader = panel.reader
    for width in (700, 520, 380):
        panel.resize(width, 700)
        _settle(qloop)
        assert panel.fit_button.isChecked()
        viewport = reader.viewport().width()
        assert reader.page_rect(2).width() <= viewport - 2, (width, reader.page_rect(2), viewport)
        assert reader.page_rect(2).width() >= viewport - 60
        assert reader.horizontalScrollBar().maximum() == 0
        # and drawn at that width, not the old image stretched
        run_until(qloop, lambda v=viewport: panel.current_image.width() / panel.devicePixelRatioF() <= v)
        assert reader.page_rect(2).width() - 2 <= panel.current_image.width() / panel.devicePixelRatioF()
    # the viewport narrowed with the reader's own size unchanged (a scroll bar or margin
    # appearing): the fitted page follows it too
    reader.setViewportMargins(0, 0, 120, 0)
    _settle(qloop)
    viewport = reader.viewport().width()
    assert reader.page_rect(2).width() <= viewport - 2, (reader.page_rect(2), viewport)
    assert reader.horizontalScrollBar().maximum() == 0



def test_a_citation_in_a_small_window_gets_room_to_read_and_gives_it_back(qloop, qtbot, services, tmp_path):
    """At 1024×640 the panel was ~190 px: "Cop…ion", "p. 4/" and a page ~150 px wide."""
    from haiku_desk.views.main_window import READABLE_WIDTH

    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, services.library, report.path)
    window = open_main_window(qtbot, services, 1024, 640)
    panel = window.citation_panel
    assert window.splitter.sizes()[2] == 0 and not panel.isVisible()  # empty, it yields its room
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    window.show_citation(_citation(entry, [Box(2, *report.block("p_discussion").rect)]))
    run_until(qloop, lambda: bool(shown))
    _settle(qloop)
    assert panel.width() >= READABLE_WIDTH
    assert window.reader_mode.active and panel.reader_button.isChecked()  # says so, one click undoes it
    before = window.reader_mode._sizes  # the three panes it took the room of
    assert 0 < before[2] < READABLE_WIDTH  # the usual layout leaves the reader too little
    assert window.chat_pane.isVisible()  # the chat stays beside the reader
    assert panel.reader.page_rect(2).width() >= READABLE_WIDTH - 60
    for widget in (panel.copy_button, panel.open_button, panel.reader_button, panel.page_label):
        assert widget.width() >= widget.sizeHint().width(), f"{widget.accessibleName()} is squeezed"
    assert panel.page_label.width() >= panel.page_label.fontMetrics().horizontalAdvance(panel.page_label.text())
    assert panel.page_label.text().startswith("p. 2/")
    panel.reader_button.click()  # given back: the panes as they were
    assert not window.reader_mode.active
    assert all(abs(a - b) <= 4 for a, b in zip(window.splitter.sizes(), before, strict=True))  # a handle's pixels
    # a citation in a window wide enough leaves the panes alone
    window.resize(1600, 900)
    _settle(qloop)
    sizes = window.splitter.sizes()
    window.show_citation(_citation(entry, [Box(1, *report.block("p_intro").rect)], index=2))
    assert not window.reader_mode.active and window.splitter.sizes() == sizes


def test_a_narrow_panel_shows_its_buttons_as_icons_with_names(qloop, library, panel, tmp_path):
    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, report.path)
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(_citation(entry, [Box(2, *report.block("p_discussion").rect)]))
    run_until(qloop, lambda: bool(shown))
    _settle(qloop)
    words = Qt.ToolButtonStyle.ToolButtonTextBesideIcon
    assert panel.copy_button.toolButtonStyle() == words and panel.open_button.toolButtonStyle() == words
    panel.resize(200, 700)
    _settle(qloop)
    for button, name in ((panel.copy_button, "Copy citation"), (panel.open_button, "Open original")):
        assert button.toolButtonStyle() == Qt.ToolButtonStyle.ToolButtonIconOnly, name
        assert not button.icon().isNull() and button.accessibleName() == name and name.split()[0] in button.toolTip()
        assert button.width() >= button.sizeHint().width()  # whole, not elided
    assert panel.page_label.text() == "2/3 •" and "cited" in panel.page_label.toolTip()
    assert panel.page_label.width() >= panel.page_label.fontMetrics().horizontalAdvance(panel.page_label.text())
    panel.resize(520, 700)  # room again: the words come back
    _settle(qloop)
    assert panel.copy_button.toolButtonStyle() == words and panel.page_label.text().startswith("p. 2/")


def test_the_first_start_gives_the_reader_a_share_beside_the_chat_when_maximised(qloop, qtbot, services):
    """Maximised after the first show (no saved pane widths), the stretch factors gave the
    reader ~500 px of 1920 and the chat ~1160."""
    window = open_main_window(qtbot, services, 1280, 800)
    window.resize(1920, 1080)  # what maximising does once the window is shown
    _settle(qloop)
    library, chat, reader = window.splitter.sizes()
    assert reader >= 0.38 * (chat + reader), (library, chat, reader)
    assert chat >= window.chat_pane.default_width()
    # a splitter the user drags is theirs: a later resize keeps the proportions, not the defaults
    window.splitter.splitterMoved.emit(300, 1)
    window.splitter.setSizes([library, chat + 200, reader - 200])
    dragged = window.splitter.sizes()
    window.resize(1700, 1000)
    _settle(qloop)
    assert window.splitter.sizes()[2] < 0.38 * sum(window.splitter.sizes()[1:])
    assert dragged


_STRAY_EMPHASIS_MD = """# Field notes on irrigation

## Method

**Night irrigation** was compared with day irrigation over three seasons. **Yield per plot rose
by 9.8 % under night irrigation while evaporation losses fell.

| Plot | **Yield (t/ha) | Evaporation |
|------|------|------|
| A | **4.2 | 12 % |
| B | 3.9 | 15 % |

## Results

The growers said night irrigation** saved water in every season.
"""


def test_a_text_source_never_shows_a_documents_stray_emphasis_markers(qloop, library, panel, tmp_path):
    """A tester's DEFECT: a document's literal ``**`` (unpaired, from its own text) showed raw
    in the reader ("**Yield per plot", "**4.2"), as answers and passages no longer do; paired
    ones stay emphasis."""
    path = tmp_path / "field-notes.md"
    path.write_text(_STRAY_EMPHASIS_MD)
    _ingest(qloop, library, path)
    hits = qloop.run_until_complete(library.search_passages("yield per plot night irrigation", limit=1))
    citation = Citation.from_result(1, hits[0].chunk_id, hits[0])
    kinds: list[str] = []
    panel.document_shown.connect(kinds.append)
    panel.show_citation(citation)
    run_until(qloop, lambda: bool(kinds))
    text = panel.text_reader.toPlainText()
    assert kinds == ["text"] and "Yield per plot" in text and "4.2" in text and "saved water" in text
    assert "**" not in text, text
    assert panel.text_reader.passage_text()  # the passage is still found and highlighted
    # (the stored text keeps only the unpaired ones; a pair, were it kept, stays emphasis)
    reader = panel.text_reader
    assert reader.show_text("**Night irrigation** was compared. **Yield per plot rose.", "Yield per plot rose")
    assert "**" not in reader.toPlainText()
    assert reader.document().find("Night irrigation").charFormat().fontWeight() >= 600


def test_the_cited_passage_and_its_place_never_show_stray_emphasis_markers(qloop, library, panel, tmp_path):
    """The passage shown beneath a cited page (plain text, its tables as tables), the heading
    line and a removed document's quote drop a document's ``**`` as the chat's source cards do."""
    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, report.path)
    content = (
        "**Night convoys ran short of kerosene in the second winter.\n\n"
        "| Depot | **Litres |\n|-|-|\n| North | **4,200 |\n| South | 3,900 |"
    )
    citation = _citation(entry, [Box(2, *report.block("p_discussion").rect)], content=content)
    citation = citation.model_copy(update={"headings": ["**3 Discussion", "3.1 Night convoys**"]})
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(citation)
    run_until(qloop, lambda: bool(shown))
    passage = panel.snippet.toPlainText()
    assert panel.snippet.isVisible() and "Night convoys ran short" in passage and "4,200" in passage
    assert "**" not in passage, passage
    assert "3 Discussion" in panel.headings.full_text and "**" not in panel.headings.full_text

    library.delete([entry.key])
    run_until(qloop, lambda: library.entry(entry.key) is None, SLOW)
    kinds: list[str] = []
    panel.document_shown.connect(kinds.append)
    panel.show_citation(citation.model_copy(update={"index": 2}))
    run_until(qloop, lambda: bool(kinds))
    quote = panel.message_text()
    assert kinds == ["removed"] and "Night convoys ran short" in quote
    assert "**" not in quote, quote


def _contrast(a, b) -> float:
    from PySide6.QtGui import QColor

    def luminance(colour) -> float:
        c = QColor(colour)
        channels = []
        for value in (c.red(), c.green(), c.blue()):
            s = value / 255
            channels.append(s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4)
        return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_text_the_reader_colours_itself_meets_wcag_aa_in_light_and_dark(
    qloop, library, panel, tmp_path, themed
):
    """A removed document's "Cited as …" line was grey (#808080): 3.55:1 on the light window
    (4.54:1 in dark, just over). The reader's own colours, outside the stylesheet's tokens: that
    line in the scheme's secondary colour (and following a switch of scheme), the text source's
    passage and find highlights with their black text."""
    from PySide6.QtGui import QColor

    from haiku_desk.views import theme
    from haiku_desk.views.text_reader import FIND_COLOUR, FIND_CURRENT_COLOUR

    for background in (PASSAGE_COLOUR, FIND_COLOUR, FIND_CURRENT_COLOUR):
        assert _contrast(QColor("black"), background) >= 4.5

    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, report.path)
    citation = _citation(entry, [Box(2, *report.block("p_discussion").rect)], content="Night convoys ran short.")
    library.delete([entry.key])
    run_until(qloop, lambda: library.entry(entry.key) is None, SLOW)
    tokens = theme.apply_theme(themed, "light")
    kinds: list[str] = []
    panel.document_shown.connect(kinds.append)
    panel.show_citation(citation)
    run_until(qloop, lambda: bool(kinds))

    def cited_as_colour() -> QColor:
        cursor = panel.message.document().find("Cited as")
        assert not cursor.isNull(), panel.message_text()
        return cursor.charFormat().foreground().color()

    for scheme in ("light", "dark"):
        tokens = theme.apply_theme(themed, scheme)
        colour = cited_as_colour()
        assert _contrast(colour, tokens.window) >= 4.5, (scheme, colour.name())
        assert colour.name() == tokens.text_secondary


def test_copy_citation_quotes_the_passage_without_stray_emphasis_markers(qloop, library, panel, tmp_path):
    """Copy citation puts the passage on the clipboard as the panel shows it: a document's
    ``**`` dropped (it copied "**Night convoys … **4,200")."""
    from PySide6.QtWidgets import QApplication

    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, library, report.path)
    content = "**Night convoys ran short of kerosene.\n\n| Depot | **Litres |\n|-|-|\n| North | **4,200 |"
    citation = _citation(entry, [Box(2, *report.block("p_discussion").rect)], content=content)
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(citation)
    run_until(qloop, lambda: bool(shown))
    copied = panel.copy_citation()
    assert "Night convoys ran short of kerosene" in copied and "4,200" in copied
    assert "**" not in copied, copied
    assert QApplication.clipboard().text() == copied
    assert panel.citation.content == content  # the citation itself is kept as the library gave it


def _table_citation(entry, table, row: int) -> Citation:
    """A table chunk's citation as the chunker makes it: its header's boxes, then its row's
    (the header far above a row low on the page), its text the header and the row as Markdown."""
    lines = [table.header, ["-"] * len(table.header), table.rows[row]]
    content = "\n".join("| " + " | ".join(cells) + " |" for cells in lines)
    return _citation(entry, [Box(1, *table.header_rect), Box(1, *table.row_rects[row])], content=content)


def test_zoom_on_a_landscape_table_keeps_the_cited_row_in_view(qloop, library, panel, tmp_path):
    """Tester (reader mode, NICS checks, Texas cited): "+" four times left the view at the
    page's top (Alabama…), the highlighted Texas row off-screen below."""
    layout, table = pdf_factory.make_landscape_table_pdf(tmp_path / "checks.pdf")
    entry = _ingest(qloop, library, layout.path)
    row = table.rows.index(next(r for r in table.rows if r[0] == "Texas"))
    cited = Box(1, *table.row_rects[row])
    panel.resize(860, 760)  # about the reader's room in reader mode at 1440×900
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(_table_citation(entry, table, row))
    run_until(qloop, lambda: bool(shown))
    _assert_in_view(panel, cited)
    for presses in range(1, 6):
        width = panel.current_image.width()
        panel.zoom_in_button.click()
        run_until(qloop, lambda n=presses: len(shown) == n + 1)
        assert panel.current_image.width() > width
        _assert_in_view(panel, cited)
    for presses in range(6, 9):
        panel.zoom_out_button.click()
        run_until(qloop, lambda n=presses: len(shown) == n + 1)
        _assert_in_view(panel, cited)
    panel.fit_button.click()
    run_until(qloop, lambda: len(shown) == 10)
    _assert_in_view(panel, cited)


def test_a_removed_documents_quote_shows_its_table_as_a_table(qloop, library, panel, tmp_path):
    """Tester: a removed .docx's kept quote read "…two years. | Item | Cost | |-|-| | PIT tags |
    6,000 | …": its lines were joined, the table's pipes shown as text."""
    from haiku_desk.views.markdown_tables import cell_text, tables

    path = tmp_path / "grant.md"
    path.write_text("# Grant proposal draft\n\nThe proposed study will tag 300 amphibians.\n")
    entry = _ingest(qloop, library, path)
    content = (
        "The proposed study will tag 300 amphibians with PIT tags. The requested budget is "
        "48,500 dollars over two years.\n\n| Item | Cost |\n|-|-|\n| PIT tags | 6,000 |\n| Field assistant | 32,000 |"
    )
    citation = _citation(entry, [], content=content)
    library.delete([entry.key])
    run_until(qloop, lambda: library.entry(entry.key) is None, SLOW)
    kinds: list[str] = []
    panel.document_shown.connect(kinds.append)
    panel.show_citation(citation)
    run_until(qloop, lambda: bool(kinds))
    assert kinds == ["removed"]
    text = panel.message_text()
    assert "This document was removed from the library" in text and "48,500 dollars over two years" in text
    assert "|" not in text and "-|-" not in text, text
    [table] = tables(panel.message.document())
    assert (table.rows(), table.columns()) == (3, 2)
    assert [cell_text(table, r, c) for r in range(3) for c in range(2)] == [
        "Item", "Cost", "PIT tags", "6,000", "Field assistant", "32,000"
    ]


def test_a_table_citation_opens_at_its_row_when_the_header_is_far_above_it(qloop, library, panel, tmp_path):
    """A short reader: the header and the cited row do not fit together, the row is shown."""
    layout, table = pdf_factory.make_landscape_table_pdf(tmp_path / "checks.pdf")
    entry = _ingest(qloop, library, layout.path)
    row = next(i for i, r in enumerate(table.rows) if r[0] == "Texas")
    panel.resize(860, 420)
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    panel.show_citation(_table_citation(entry, table, row))
    run_until(qloop, lambda: bool(shown))
    header = _highlight_in_viewport(panel, Box(1, *table.header_rect))
    assert header.bottom() < 0 or header.top() > panel.scroll.viewport().height()  # no room for both
    _assert_in_view(panel, Box(1, *table.row_rects[row]))
    # reader mode widens it: the fitted page grows, the row stays where it was (not the header)
    before = _highlight_in_viewport(panel, Box(1, *table.row_rects[row])).top()
    width = panel.current_image.width()
    panel.resize(1100, 420)
    run_until(qloop, lambda: panel.current_image.width() > width)
    assert abs(_highlight_in_viewport(panel, Box(1, *table.row_rects[row])).top() - before) <= 2


def test_reader_mode_the_app_took_ends_when_the_reader_is_emptied(qloop, qtbot, services, tmp_path):
    """Tester 16:59: a citation in a narrow panel turned reader mode on by itself; Ctrl+N then
    cleared the reader but left reader mode on: the chat beside an empty reader, the library
    and the conversation list hidden. Reader mode the app took ends with what it was for;
    reader mode the person chose stays."""
    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    entry = _ingest(qloop, services.library, report.path)
    window = open_main_window(qtbot, services, 1024, 640)
    panel = window.citation_panel
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    services.chat.new_conversation()
    window.show_citation(_citation(entry, [Box(2, *report.block("p_discussion").rect)]))
    run_until(qloop, lambda: bool(shown))
    assert window.reader_mode.active and not window.library_pane.isVisible()

    services.chat.new_conversation()  # Ctrl+N: the reader follows the new chat, empty
    assert panel.citation is None
    assert not window.reader_mode.active
    assert window.library_pane.isVisible() and window.chat_pane.isVisible()

    window.set_reader_mode(True)  # the person's own choice
    services.chat.new_conversation()
    assert window.reader_mode.active
