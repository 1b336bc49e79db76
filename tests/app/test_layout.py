"""The main window holds still and works from the keyboard: splitters move only when dragged,
the window works at 1024×640 with every button whole, the View menu hides and shows panes
(remembered), Tab leaves the table and the question box, Ctrl+, opens the settings, F1 the
shortcuts page; CJK text draws with the bundled fallback font."""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QAbstractButton, QApplication
from qt_helpers import run_until

from haiku_desk.services.library import uri_for
from haiku_desk.views.main_window import SMALLEST_SIZE, MainWindow

SLOW = 180


def _window(qtbot, services, size=(1440, 900)) -> MainWindow:
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.citation_panel.open_in_system_viewer = False
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    QApplication.processEvents()
    return window


def _settle() -> None:
    for _ in range(3):
        QApplication.processEvents()


def test_splitters_hold_when_the_chat_header_text_or_the_selection_changes(qloop, qtbot, services, tmp_path, make_pdf):
    window = _window(qtbot, services)
    pdfs = [make_pdf(tmp_path / f"{n}.pdf", f"Ledger entries about {n}.") for n in ("walnut", "cedar")]
    services.library.add_paths(pdfs)
    run_until(qloop, lambda: all((e := services.library.entry(uri_for(p))) and e.searchable for p in pdfs), SLOW)
    _settle()
    # (the chat pane's own splitter holds once its header labels elide: helper "chat")
    outer = window.splitter.sizes()

    chat = window.chat_pane
    chat.scope_label.setText("· " + "a scope naming many documents by their long titles " * 6)
    chat.model_label.setText("gpt-oss-120b-instruct-q4_k_m.gguf on http://127.0.0.1:8080/v1 " * 3)
    _settle()
    assert window.splitter.sizes() == outer

    pane = window.library_pane
    pane.select_keys([uri_for(pdfs[0])])
    _settle()
    pane.select_keys([uri_for(p) for p in pdfs])
    _settle()
    pane.table.setFocus()
    _settle()
    assert window.splitter.sizes() == outer


def test_the_window_fits_1024_by_640_with_every_button_whole(qtbot, services):
    window = _window(qtbot, services, SMALLEST_SIZE)
    minimum = window.minimumSizeHint().expandedTo(window.minimumSize())
    assert minimum.width() <= 960 and minimum.height() <= SMALLEST_SIZE[1]
    window.resize(*SMALLEST_SIZE)
    _settle()
    assert window.width() == SMALLEST_SIZE[0] and window.height() == SMALLEST_SIZE[1]
    inside = window.rect()
    for button in window.findChildren(QAbstractButton):
        if not button.isVisibleTo(window) or button.window() is not window:
            continue
        rect = button.rect().translated(button.mapTo(window, button.rect().topLeft()))
        parent = button.parentWidget()
        assert inside.contains(rect), f"{button.text()!r} is cut off by the window"
        if parent is not None:
            assert parent.rect().contains(button.geometry()), f"{button.text()!r} is cut off by its pane"
        if button.text():
            text = button.fontMetrics().horizontalAdvance(button.text().replace("&", ""))
            assert button.width() >= text + 6, f"{button.text()!r} is squeezed"


def test_at_1024_by_640_the_chat_scope_stays_whole_and_a_long_model_name_elides(qtbot, services):
    window = _window(qtbot, services, SMALLEST_SIZE)
    chat = window.chat_pane
    chat.model_label.set_full_text("qwen2.5-coder-32b-instruct-q4_K_M (OpenAI-compatible endpoint)")
    chat.scope_label.set_full_text("· all documents")
    _settle()
    assert chat.scope_label.text() == "· all documents"  # whole
    assert chat.model_label.is_elided() and chat.model_label.text().endswith("…")


def test_the_first_window_fits_the_screen(qtbot, services):
    window = MainWindow(services)
    qtbot.addWidget(window)
    available = window.screen().availableGeometry()
    assert window.width() <= available.width() and window.height() <= available.height() - 40


def test_view_menu_hides_and_shows_panes_and_remembers(qtbot, services):
    window = _window(qtbot, services)
    for name, widget in (
        ("library", window.library_pane),
        ("conversations", window.chat_pane.splitter.widget(0)),
        ("citations", window.citation_panel),
    ):
        action = window.pane_actions[name]
        assert action.isChecked() and widget.isVisible()
        action.trigger()
        assert not action.isChecked() and not widget.isVisible()
    assert QSettings().value("main_window/show_library", type=bool) is False
    window.pane_actions["citations"].trigger()
    assert window.citation_panel.isVisible()
    window.close()

    again = _window(qtbot, services)
    assert not again.library_pane.isVisible() and not again.pane_actions["library"].isChecked()
    assert not again.chat_pane.splitter.widget(0).isVisible()
    assert again.citation_panel.isVisible()
    again.pane_actions["library"].trigger()
    assert again.library_pane.isVisible()


def test_tab_leaves_the_table_and_the_question_box(qloop, qtbot, services, tmp_path, make_pdf):
    window = _window(qtbot, services)
    window.activateWindow()
    pdfs = [make_pdf(tmp_path / f"{n}.pdf", f"Notes about {n}.") for n in ("otters", "voles", "newts")]
    services.library.add_paths(pdfs)
    run_until(qloop, lambda: all((e := services.library.entry(uri_for(p))) and e.searchable for p in pdfs), SLOW)
    table = window.library_pane.table
    table.setFocus()
    table.setCurrentIndex(window.library_pane.proxy.index(0, 0))
    qtbot.keyClick(table, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is not table  # one stop, not a walk through its cells
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backtab, Qt.KeyboardModifier.ShiftModifier)
    assert QApplication.focusWidget() is table

    question = window.chat_pane.input
    question.setFocus()
    qtbot.keyClicks(question, "how many voles")
    qtbot.keyClick(question, Qt.Key.Key_Tab)
    assert question.toPlainText() == "how many voles"  # no tab typed
    assert QApplication.focusWidget() is not question

    # F6 walks the panes: table -> conversations -> question -> citation panel -> table
    table.setFocus()
    seen = []
    for _ in range(4):
        window.next_pane_action.trigger()
        seen.append(QApplication.focusWidget())
    assert seen[0] is window.chat_pane.conversation_list and seen[1] is question
    assert window.citation_panel.isAncestorOf(seen[2]) or seen[2] is window.citation_panel
    assert seen[3] is table


def test_preferences_and_help_shortcuts(qtbot, services):
    from haiku_desk.views.help_dialog import ShortcutsDialog
    from haiku_desk.views.settings_dialog import ModelSettingsDialog

    window = _window(qtbot, services)
    window.activateWindow()
    qtbot.waitActive(window)
    window.chat_pane.input.setFocus()
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
    dialog = getattr(window, "model_settings_dialog", None)
    assert isinstance(dialog, ModelSettingsDialog) and dialog.isVisible()
    dialog.close()

    window.activateWindow()
    window.chat_pane.input.setFocus()
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_F1)
    help_dialog = getattr(window, "help_dialog", None)
    assert isinstance(help_dialog, ShortcutsDialog) and help_dialog.isVisible()
    rows = dict(help_dialog.rows())
    assert any("Ctrl+," in keys for keys in rows) and any(does == "Models" for does in rows.values())
    assert "F1" in " ".join(rows) and "F6" in " ".join(rows)
    assert any("Tick or untick" in does for does in rows.values())
    help_dialog.close()


def test_cjk_text_draws_with_the_bundled_fallback_font(qapp):
    from PySide6.QtGui import QTextLayout

    from haiku_desk.views.fonts import FALLBACK_FAMILY, fallback_font_bytes, install_fallback_font

    before = qapp.font()
    try:
        install_fallback_font(fallback_font_bytes())
        assert FALLBACK_FAMILY in qapp.font().families()  # the bundled Droid Sans Fallback
        for text in ("적립 제외 대상", "停车区用地指标", "あいうえお"):
            layout = QTextLayout(text, qapp.font())
            layout.beginLayout()
            layout.createLine()
            layout.endLayout()
            runs = layout.glyphRuns()
            cjk = [r for r in runs if r.rawFont().familyName() == FALLBACK_FAMILY]
            assert cjk, f"{text}: drawn with {[r.rawFont().familyName() for r in runs]}"
            assert all(0 not in r.glyphIndexes() for r in cjk)  # glyph 0 is the empty box
    finally:
        qapp.setFont(before)
