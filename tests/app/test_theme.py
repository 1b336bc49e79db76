"""The look (issue 34): one stylesheet with light and dark palettes that parse without Qt
warnings, text that meets WCAG AA in both, the scheme chosen in View › Appearance (or the
system's), icon-only buttons with screen-reader names, the F6 pane frame and the state badges."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QObject, QSettings, Qt, QtMsgType, Signal, qInstallMessageHandler
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QAbstractButton, QApplication, QTableView

from haiku_desk.views import theme
from haiku_desk.views.main_window import DEFAULT_SIZE, MainWindow

AA = 4.5  # WCAG 2.x AA for body text


def luminance(colour: str | QColor) -> float:
    """WCAG 2.x relative luminance, from sRGB."""
    c = QColor(colour)
    channels = []
    for value in (c.red(), c.green(), c.blue()):
        s = value / 255
        channels.append(s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4)
    r, g, b = channels
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str | QColor, b: str | QColor) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_contrast_formula_matches_wcag_reference_values():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the classic near miss
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)


@pytest.fixture
def window(qtbot, services, themed):
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.citation_panel.open_in_system_viewer = False
    window.resize(*DEFAULT_SIZE)
    window.show()
    qtbot.waitExposed(window)
    return window


def inked_colours(icon) -> set[str]:
    image = icon.pixmap(48, 48).toImage()
    return {
        image.pixelColor(x, y).name()
        for x in range(image.width())
        for y in range(image.height())
        if image.pixelColor(x, y).alpha() == 255
    }


def pixel(widget, x: int, y: int) -> str:
    return widget.grab().toImage().pixelColor(x, y).name()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_text_colour_meets_wcag_aa_on_its_background(scheme):
    tokens = theme.TOKENS[scheme]
    pairs = theme.text_pairs(tokens)
    assert len(pairs) >= 25
    low = [f"{what}: {contrast(fg, bg):.2f}" for what, fg, bg in pairs if contrast(fg, bg) < AA]
    assert not low, low


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_applied_palette_meets_wcag_aa(themed, scheme):
    """What Qt draws from the palette (item text, window text, placeholders, the selection)."""
    theme.apply_theme(themed, scheme)
    p = themed.palette()
    R = QPalette.ColorRole
    pairs = {
        "text on base": (R.Text, R.Base),
        "window text on window": (R.WindowText, R.Window),
        "button text on button": (R.ButtonText, R.Button),
        "placeholder on base": (R.PlaceholderText, R.Base),
        "placeholder on window": (R.PlaceholderText, R.Window),
        "selected text": (R.HighlightedText, R.Highlight),
        "links on base": (R.Link, R.Base),
        "tooltips": (R.ToolTipText, R.ToolTipBase),
    }
    low = {
        what: round(contrast(p.color(fg), p.color(bg)), 2)
        for what, (fg, bg) in pairs.items()
        if contrast(p.color(fg), p.color(bg)) < AA
    }
    assert not low, low
    assert (p.color(R.Window).name(), p.color(R.Text).name()) == (
        theme.TOKENS[scheme].window,
        theme.TOKENS[scheme].text,
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_stylesheet_loads_without_qt_warnings_and_paints_the_window(window, scheme, qtbot):
    messages: list[str] = []

    def handler(mode, _context, message):
        if mode != QtMsgType.QtDebugMsg and not message.startswith("This plugin does not support"):
            messages.append(message)

    previous = qInstallMessageHandler(handler)
    try:
        tokens = theme.apply_theme(QApplication.instance(), scheme)
        sheet = QApplication.instance().styleSheet()
        assert sheet and "${" not in sheet and tokens.window in sheet
        # every widget re-polished under the sheet, and the menus (menu rules) shown once
        window.menuBar().actions()[0].menu().popup(window.mapToGlobal(window.rect().center()))
        window.library_pane.add_files_button.menu().popup(window.mapToGlobal(window.rect().center()))
        qtbot.wait(50)
        for menu_action in window.menuBar().actions():
            menu_action.menu().hide()
        window.library_pane.add_files_button.menu().hide()
        window.grab()
    finally:
        qInstallMessageHandler(previous)
    assert not messages, messages
    central = window.centralWidget()
    assert pixel(central, 2, central.height() // 2) == tokens.window  # the margin around the panes
    transcript = window.chat_pane.transcript
    assert pixel(transcript, transcript.width() - 3, transcript.height() - 3) == tokens.surface


def test_view_appearance_switches_the_scheme_and_remembers_it(window, qtbot):
    app = QApplication.instance()
    theme.apply_theme(app)  # the stored choice: none yet, so the system's
    offscreen_dark = theme.system_is_dark(app)
    actions = {a.objectName(): a for a in window.appearance_menu.actions()}
    assert set(actions) == {"scheme_system", "scheme_light", "scheme_dark"}
    assert actions["scheme_system"].isChecked()

    actions["scheme_dark"].trigger()
    assert app.palette().color(QPalette.ColorRole.Window).name() == theme.DARK.window
    assert QSettings().value(theme.SETTINGS_KEY) == "dark"
    assert theme.is_dark(app)
    central = window.centralWidget()
    assert pixel(central, 2, central.height() // 2) == theme.DARK.window
    assert theme.DARK.text in inked_colours(window.chat_pane.stop_button.icon())  # re-tinted for dark

    actions["scheme_light"].trigger()
    assert app.palette().color(QPalette.ColorRole.Window).name() == theme.LIGHT.window
    assert theme.LIGHT.text in inked_colours(window.chat_pane.stop_button.icon())
    assert QSettings().value(theme.SETTINGS_KEY) == "light"

    actions["scheme_system"].trigger()
    expected = theme.DARK if offscreen_dark else theme.LIGHT
    assert app.palette().color(QPalette.ColorRole.Window).name() == expected.window
    assert theme.stored_scheme() == "system"
    # the next start reads the choice back
    QSettings().setValue(theme.SETTINGS_KEY, "dark")
    assert theme.apply_theme(app) is theme.DARK


def test_following_the_system_switches_when_the_system_does(themed, monkeypatch):
    theme.apply_theme(themed, "system")
    monkeypatch.setattr(theme, "system_is_dark", lambda _app: True)
    themed.styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    assert themed.palette().color(QPalette.ColorRole.Window).name() == theme.DARK.window
    # a person's explicit choice wins over the system's
    theme.apply_theme(themed, "light")
    themed.styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    assert themed.palette().color(QPalette.ColorRole.Window).name() == theme.LIGHT.window


def test_unknown_scheme_is_refused(themed):
    with pytest.raises(ValueError, match="unknown colour scheme 'sepia'"):
        theme.set_scheme(themed, "sepia")


def test_icon_only_buttons_have_screen_reader_names(window):
    pane = window.chat_pane
    for button, name in (
        (pane.new_button, "New chat"),
        (pane.rename_button, "Rename chat"),
        (pane.delete_button, "Delete chat"),
    ):
        assert button.text() == "" and not button.icon().isNull(), name
        assert button.accessibleName() == name and button.toolTip()
    for button in (pane.send_button, pane.stop_button, pane.export_button, window.library_pane.add_files_button):
        assert not button.icon().isNull(), button.accessibleName()
    for action in (window.add_files_action, window.models_action, window.watch_folder_action):
        assert not action.icon().isNull(), action.text()
    unnamed = [
        (b.objectName() or repr(b), type(b.parent()).__name__, b.parent().accessibleName(), b.toolTip())
        for b in window.findChildren(QAbstractButton)
        if not b.text() and not b.icon().isNull() and not b.accessibleName()
    ]
    assert not unnamed


def test_the_f6_pane_frame_is_drawn_in_the_focus_colour(window):
    theme.apply_theme(QApplication.instance(), "light")
    pane = window.library_pane
    middle = pane.width() // 2
    assert pixel(pane, middle, 0) != theme.LIGHT.focus
    theme.set_flag(pane, "focusPane", True)
    assert pixel(pane, middle, 0) == theme.LIGHT.focus
    theme.set_flag(pane, "focusPane", False)
    assert pixel(pane, middle, 0) != theme.LIGHT.focus


class _Rows(QObject):
    """What the documents table reads of a library (models/documents.py's Rows), holding
    plain LibraryEntry values."""

    entry_changed = Signal(object)
    entry_removed = Signal(str)
    opened = Signal()

    def __init__(self, entries):
        super().__init__()
        self.entries = entries


def test_document_states_are_drawn_as_badges(qtbot, themed):
    from haiku_desk.models.documents import STATE, DocumentsModel
    from haiku_desk.services.entries import DocumentState, LibraryEntry
    from haiku_desk.views.library_pane import _DocumentsDelegate

    tokens = theme.apply_theme(themed, "light")
    entries = [
        LibraryEntry(key="file:///a.pdf", name="Ready paper", state=DocumentState.HYBRID),
        LibraryEntry(key="file:///b.pdf", name="Broken scan", state=DocumentState.FAILED),
        LibraryEntry(key="file:///c.pdf", name="Scanned book", state=DocumentState.HYBRID, recognised_pages=3),
        LibraryEntry(key="file:///d.pdf", name="Stopped", state=DocumentState.CANCELLED),
        LibraryEntry(key="file:///e.pdf", name="Half way", state=DocumentState.PARSING, done=5, total=10),
    ]
    rows = _Rows(entries)
    model = DocumentsModel(rows)
    table = QTableView()
    qtbot.addWidget(table)
    table.setModel(model)
    table.setItemDelegate(_DocumentsDelegate(table))
    table.resize(520, 300)
    table.setColumnWidth(0, 260)
    table.setColumnWidth(STATE, 200)
    table.verticalHeader().setDefaultSectionSize(36)
    table.show()
    qtbot.waitExposed(table)
    image = table.viewport().grab().toImage()

    def colours_in_state_cell(row: int) -> set[str]:
        rect = table.visualRect(model.index(row, STATE))
        return {
            image.pixelColor(x, y).name()
            for x in range(rect.left(), rect.right())
            for y in range(rect.top(), rect.bottom())
        }

    assert tokens.ready_bg in colours_in_state_cell(0)
    assert tokens.failed_bg in colours_in_state_cell(1)
    scanned = colours_in_state_cell(2)
    assert tokens.ready_bg in scanned and tokens.ocr_bg in scanned
    assert tokens.muted_bg in colours_in_state_cell(3)
    half_way = colours_in_state_cell(4)
    assert tokens.working_bg in half_way and tokens.accent in half_way  # the badge and its progress line


def test_a_stored_documents_row_knows_its_ocr_pages():
    from haiku.rag.store.models import Document
    from haiku_desk.services.notifications import Notifications
    from haiku_desk.services.rows import DocumentRows

    rows = DocumentRows(Notifications(), lambda _uri: None)
    scanned = Document(id="1", uri="file:///scan.pdf", metadata={"pages_recognised": [1, 2, 4]}, index_state="hybrid")
    plain = Document(id="2", uri="file:///plain.pdf", index_state="hybrid")
    assert rows.from_document(scanned).recognised_pages == 3
    assert rows.from_document(plain).recognised_pages == 0


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_an_answers_grounding_badge_is_a_pill_in_the_schemes_colours(qtbot, themed, scheme):
    """Its colour was fixed (#2e7d32, #c62828: 3.1:1 and 2.9:1 on the dark surface)."""
    from haiku_desk.services.conversations import Turn
    from haiku_desk.views.chat_pane import TurnWidget

    tokens = theme.apply_theme(themed, scheme)
    for basis, kind, label in (("grounded", "ready", "Grounded"), ("missing", "failed", "No sources declared")):
        turn = Turn(question="Does it hold?", answer="It does.", grounding=basis, rests_on=basis)
        widget = TurnWidget(turn)
        qtbot.addWidget(widget)
        widget.resize(500, 200)
        widget.show()
        widget.finish(turn)
        qtbot.waitExposed(widget)
        assert widget.badge.isVisible() and label in widget.badge.text()
        assert widget.badge.property("badge") == kind
        fg, bg = getattr(tokens, f"{kind}_fg"), getattr(tokens, f"{kind}_bg")
        image = widget.badge.grab().toImage()
        colours = {image.pixelColor(x, y).name() for x in range(image.width()) for y in range(image.height())}
        assert bg in colours
        assert contrast(fg, bg) >= AA


def test_dialog_messages_take_the_schemes_error_and_warning_colours(qtbot, themed):
    from PySide6.QtWidgets import QLabel, QWidget

    tokens = theme.apply_theme(themed, "dark")
    holder = QWidget()
    qtbot.addWidget(holder)
    error, warning = QLabel("Year must be a number", holder), QLabel("Before it works: …", holder)
    error.setProperty("textRole", "error")
    warning.setProperty("textRole", "warning")
    holder.show()
    qtbot.waitExposed(holder)
    assert error.palette().color(QPalette.ColorRole.WindowText).name() == tokens.danger
    assert warning.palette().color(QPalette.ColorRole.WindowText).name() == tokens.working_fg


def test_buttons_keep_their_whole_text_at_1024x640_under_the_stylesheet(qtbot, services, themed):
    """The stylesheet's padding is wider than the style's own: the library's button row was cut
    to "Cance", "Re-inges" at 1024×640 until compact buttons took their width from it. The
    theme is applied before the window is made, as app.main does."""
    theme.apply_theme(themed, "light")
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.resize(1024, 640)
    window.show()
    qtbot.waitExposed(window)
    pane = window.library_pane
    buttons = (pane.cancel_button, pane.reingest_button, pane.delete_button, pane.unlock_button)
    cut = {b.text(): (b.width(), b.sizeHint().width()) for b in buttons if b.width() < b.sizeHint().width()}
    assert not cut, cut


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_notices_are_drawn_in_the_schemes_colours(qtbot, themed, scheme):
    """A banner's fill was a fixed translucent red/amber/blue; under the theme it is the
    scheme's own, with its text at AA contrast (text_pairs holds text on each fill)."""
    from haiku_desk.services.notifications import Level, Notice
    from haiku_desk.views.notification_area import NoticeWidget

    tokens = theme.apply_theme(themed, scheme)
    for level, fill in ((Level.ERROR, tokens.failed_bg), (Level.WARNING, tokens.working_bg), (Level.INFO, tokens.accent_soft)):
        widget = NoticeWidget(Notice(level, "The model server did not answer"))
        qtbot.addWidget(widget)
        widget.resize(400, 40)
        widget.show()
        qtbot.waitExposed(widget)
        assert pixel(widget, 4, widget.height() // 2) == fill, level
        assert widget.close_button.accessibleName() == "Dismiss"


def test_the_conversation_keeps_most_of_the_chat_column_at_1024x640(qtbot, services, themed):
    """A tester's DEFECT: at 1024×640 the transcript was ~210 px of a ~550 px column (three rows
    of toggles, a 110 px question box). The question box now takes at most a seventh of the
    pane and the toggles fit two rows: the conversation gets well over half the column."""
    theme.apply_theme(themed, "light")
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.resize(1024, 640)
    window.show()
    qtbot.waitExposed(window)
    qtbot.wait(50)
    pane = window.chat_pane
    column = pane.splitter.widget(1)
    # 261 of 516 px (0.51) before, 326 (0.63) after, on an empty conversation
    assert pane.scroll.height() > 0.58 * column.height(), (pane.scroll.height(), column.height(), pane.input.height())
    lines = pane.input.fontMetrics().lineSpacing()
    assert pane.input.height() >= 3 * lines  # still three lines to write in


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_secondary_and_placeholder_text_is_not_faded(qtbot, themed, scheme):
    """A tester's DEFECT: sources' snippets (drawn in the placeholder role) and the library's
    file names read at 2.3:1 (light) and 3.1:1 (dark): a stylesheet "color" made Qt derive the
    placeholder colour from it at half alpha."""
    from PySide6.QtWidgets import QLabel

    tokens = theme.apply_theme(themed, scheme)
    snippet = QLabel("…three seasons, night irrigation lost 9.8 %")
    snippet.setProperty("textRole", "secondary")
    snippet.setForegroundRole(QPalette.ColorRole.PlaceholderText)
    table = QTableView()
    for widget in (snippet, table):
        qtbot.addWidget(widget)
        widget.show()
        qtbot.waitExposed(widget)
        placeholder = widget.palette().color(QPalette.ColorRole.PlaceholderText)
        assert (placeholder.name(), placeholder.alpha()) == (tokens.text_muted, 255)
        assert contrast(placeholder, tokens.surface) >= AA


def test_switching_scheme_keeps_the_style_and_the_fonts(qtbot, themed, monkeypatch):
    """A tester's DEFECT: on X11 each switch of scheme changed the font face and dropped the
    headings' bold: apply_theme set the style again, which resets the widgets' fonts to the
    platform's."""
    theme.apply_theme(themed, "light")
    font = themed.font().toString()
    styles_set: list[object] = []
    monkeypatch.setattr(themed, "setStyle", lambda *args: styles_set.append(args))
    theme.apply_theme(themed, "dark")
    theme.apply_theme(themed, "light")
    assert styles_set == []
    assert themed.font().toString() == font


def test_radio_buttons_show_which_is_chosen_in_dark(qtbot, themed):
    """A tester's DEFECT: in dark, radio buttons' rings were near black and the dot dim grey."""
    from PySide6.QtWidgets import QRadioButton, QVBoxLayout, QWidget

    tokens = theme.apply_theme(themed, "dark")
    holder = QWidget()
    qtbot.addWidget(holder)
    layout = QVBoxLayout(holder)
    chosen, other = QRadioButton("Cited rows"), QRadioButton("All rows")
    layout.addWidget(chosen)
    layout.addWidget(other)
    chosen.setChecked(True)
    holder.show()
    qtbot.waitExposed(holder)

    def colours(button):
        image = button.grab().toImage()
        return {image.pixelColor(x, y).name() for x in range(min(24, image.width())) for y in range(image.height())}

    assert tokens.accent in colours(chosen)  # the chosen one's ring is the accent
    assert tokens.border_strong in colours(other) and tokens.accent not in colours(other)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("items", [5, 10])
def test_a_drop_down_list_shows_every_item_without_scrolling(qtbot, themed, scheme, items):
    """A tester's DEFECT: every drop-down list was one row short (its last item behind a scroll
    arrow). The stylesheet's padding is what Qt takes for a combo box's popup margins, 4 px
    unfocused and 3 px focused: the popup was laid out for the one and sized for the other, 2 px
    short, and the scroll arrow that then appeared covered the last row."""
    from PySide6.QtWidgets import QComboBox, QLineEdit, QVBoxLayout, QWidget

    theme.apply_theme(themed, scheme)
    holder = QWidget()
    qtbot.addWidget(holder)
    layout = QVBoxLayout(holder)
    layout.addWidget(QLineEdit())
    combo = QComboBox()
    combo.addItems([f"Search-only answers {n}" for n in range(items)])
    layout.addWidget(combo)
    layout.addStretch(1)
    holder.resize(320, 200)
    holder.show()
    qtbot.waitExposed(holder)
    holder.activateWindow()
    combo.setFocus()  # as when it is clicked or reached with Tab
    qtbot.waitUntil(combo.hasFocus)
    combo.showPopup()
    view = combo.view()
    qtbot.waitUntil(view.isVisible)
    try:
        rows = [view.visualRect(combo.model().index(row, 0)) for row in range(items)]
        assert sum(r.height() for r in rows) <= view.viewport().height()
        assert view.verticalScrollBar().maximum() == 0  # nothing to scroll to
        assert rows[-1].bottom() < view.viewport().height()  # the last row whole, in view
        container = view.parentWidget()
        arrows = [
            child
            for child in container.children()
            if child.metaObject().className() == "QComboBoxPrivateScroller" and child.isVisible()
        ]
        assert not arrows  # no scroll arrow over the list
    finally:
        combo.hidePopup()
