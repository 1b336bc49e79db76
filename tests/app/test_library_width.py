"""Issue 34, the second hour: at 1440x900 the library's titles are readable and its badges
whole. With 24 files added the pane had ~300 px: titles cut to ~18 characters ("Trace-based
Just-in-Ti…"), the State column clipping its badges ("embedding 4…", "recognising t…", the OCR
badge "O…"), while the empty conversation list and the idle reader kept their widths."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QFontMetrics

from haiku_desk.models.documents import NAME, STATE
from haiku_desk.services.entries import DocumentState, LibraryEntry
from haiku_desk.views import theme
from haiku_desk.views.badges import badge_font, badges_for, badges_width, fitted
from haiku_desk.views.library_pane import READABLE_TITLE_CHARS
from haiku_desk.views.main_window import DEFAULT_SIZE, READABLE_WIDTH, MainWindow


@pytest.fixture
def look(request, qapp):
    """Plain (the platform's look) or the app's theme; the stylesheet put back after."""
    sheet, palette = qapp.styleSheet(), qapp.palette()
    if request.param == "themed":
        theme.apply_theme(qapp, "light")
    yield request.param
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)
    qapp.setProperty("haiku_scheme", None)
    qapp.setProperty("haiku_scheme_choice", None)


def _entry(state: DocumentState, **fields) -> LibraryEntry:
    return LibraryEntry(key=f"file:///{state.value}.pdf", name="Trace-based Just-in-Time Type Specialization", state=state, **fields)


# rows with the widest badges: figures at their widest, and a second badge
WIDE_ROWS = [
    _entry(DocumentState.EMBEDDING, stage="embedding", done=41, total=42, document_id="d1"),
    _entry(DocumentState.PARSING, stage="parsing", done=285, total=619),
    _entry(DocumentState.PARSING, stage="recognising text", done=12, total=40),
    _entry(DocumentState.TEXT, document_id="d2", recognised_pages=3),
    _entry(DocumentState.HYBRID, document_id="d3", recognised_pages=3),
]


def _drawn(pane, entry: LibraryEntry) -> list[str]:
    """What the State cell draws for ``entry`` at the column's width (the delegate's insets)."""
    width = pane.table.horizontalHeader().sectionSize(STATE)
    room = (width - 4 - 2) - 1 - 2  # rect.adjusted(4, 0, -2, 0); rect.right() - (left + 2)
    metrics = QFontMetrics(badge_font(pane.table.font()))
    return fitted(badges_for(entry), room, metrics)


@pytest.mark.parametrize("look", ["plain", "themed"], indirect=True)
def test_at_1440_by_900_titles_are_readable_and_badges_whole(qtbot, services, look):
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.resize(*DEFAULT_SIZE)
    window.show()
    qtbot.waitExposed(window)
    pane = window.library_pane
    library, chat, reader = window.splitter.sizes()

    title_room = pane.table.horizontalHeader().sectionSize(NAME)
    assert title_room >= pane.table.fontMetrics().averageCharWidth() * READABLE_TITLE_CHARS, window.splitter.sizes()
    for entry in WIDE_ROWS:  # every badge whole, figures included
        assert _drawn(pane, entry) == [b.text for b in badges_for(entry)], entry
    assert [b.text for b in badges_for(WIDE_ROWS[2])] == ["OCR 12/40"]  # text recognition, briefly
    # the others keep theirs: the reader a cited page reads in, the chat a comfortable column
    assert reader >= READABLE_WIDTH
    assert chat >= window.chat_pane.minimumWidth() and chat - window.chat_pane.splitter.sizes()[0] >= 420


def test_a_narrow_state_column_drops_figures_and_second_badges_instead_of_clipping(qapp):
    from PySide6.QtWidgets import QTableView

    metrics = QFontMetrics(badge_font(QTableView().font()))
    embedding, text_ocr = badges_for(WIDE_ROWS[0]), badges_for(WIDE_ROWS[3])
    assert fitted(embedding, badges_width(["embedding 97%"], metrics), metrics) == ["embedding 97%"]
    narrow = badges_width(["embedding"], metrics) + 4
    assert fitted(embedding, narrow, metrics) == ["embedding"]  # the line under it shows how far
    assert fitted(text_ocr, narrow, metrics) == ["text only"]  # OCR left out, never "O…"
    assert fitted(text_ocr, badges_width(["text only", "OCR"], metrics), metrics) == ["text only", "OCR"]


def _window(qtbot, services, size=DEFAULT_SIZE):
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    return window


def test_panes_saved_by_the_earlier_layout_give_the_library_its_readable_width(qtbot, services):
    """A returning user's panes were saved by the layout before titles got their width (the
    library 315 px at 1440x900): the library takes today's default width once; panes saved
    since (the user's own drag) are kept as they are."""
    from PySide6.QtCore import QSettings

    first = _window(qtbot, services)
    total = sum(first.splitter.sizes())
    first.splitter.setSizes([315, total - 315 - 360, 360])  # as the earlier version left them
    first.close()
    QSettings().remove("main_window/layout_version")  # the earlier version saved none
    QSettings().sync()

    second = _window(qtbot, services)
    pane = second.library_pane
    assert second.splitter.sizes()[0] >= pane.readable_width() - 2, second.splitter.sizes()
    total = sum(second.splitter.sizes())
    second.splitter.setSizes([330, total - 330 - 400, 400])  # now the user narrows it: kept
    second.splitter.splitterMoved.emit(330, 1)  # (what a drag of the handle sends)
    second.close()

    third = _window(qtbot, services)
    assert abs(third.splitter.sizes()[0] - 330) <= 4, third.splitter.sizes()
