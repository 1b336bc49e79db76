"""The main window: library pane | chat | citation panel, with the notification area below.

Files and folders dropped anywhere on the window (chat input included) go to the library.
The panes hold still: their widths change only when the user drags a splitter (or hides a
pane from the View menu), never because a label's text, the scope or a selection changed;
both are saved in QSettings. The window fits the screen's available area on a first start
and works down to 1024×640.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, QSize, Qt, QTimer
from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QSplitter,
    QTabWidget,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.citations import opening_page
from haiku_desk.services.entries import DocumentState
from haiku_desk.services.library_choice import log_folder, remember_library
from haiku_desk.views.citation_panel import CitationPanel
from haiku_desk.views.details_dialog import DetailsAction
from haiku_desk.views.icons import name_qt_buttons, set_icon
from haiku_desk.views.library_menu import LibraryMenu
from haiku_desk.views.library_pane import LibraryPane
from haiku_desk.views.mcp_dialog import McpAction
from haiku_desk.views.notification_area import NotificationArea
from haiku_desk.views.quit_dialog import QuitFlow
from haiku_desk.views.reader_mode import ReaderMode
from haiku_desk.views.theme import appearance_menu

if TYPE_CHECKING:
    from haiku_desk.citations import Citation
    from haiku_desk.services import AppServices
    from haiku_desk.services.conversations import Turn
    from haiku_desk.views.evidence_table import EvidenceTablePane

SETTINGS_GROUP = "main_window"
# The default pane layout's version, saved with the panes' widths. Panes saved by an earlier
# version keep their widths, except a library narrower than this version's default gives it
# (2: the library widened for readable titles; a returning user kept 315 px and cut titles).
LAYOUT_VERSION = 2
DEFAULT_SIZE = (1440, 900)
SMALLEST_SIZE = (1024, 640)  # the window must work (nothing clipped) at this size
# Room for the window manager's title bar and borders, which availableGeometry() leaves in.
FRAME_ALLOWANCE = (16, 48)
# library | chat | citation panel before the window knows its width; at the first show the chat
# gets what its conversation list and toolbar need and the others share the rest.
DEFAULT_PANE_WIDTHS = (345, 690, 393)
# of the width beside the library: the citation panel's share on a first start (the chat keeps
# at least what its toolbar needs)
READER_SHARE = 0.4
# ... and while it shows a citation or a document, until the user drags a splitter: in a wide
# window (1920 px) the chat gives the reader what it has beyond its one row of toggles (the
# tester's 19:50: a cited page ~570 px wide beside a transcript with ~700 px of empty margin).
READING_SHARE = 0.55
LIBRARY_WIDE_SHARE = 0.22  # of the window for the library, when its controls need less
# What the chat column (its conversation list and the transcript) keeps before the library
# widens for readable titles: the list and a transcript of ~65 characters a line.
CHAT_COMFORT_WIDTH = 600
# A citation opened in a panel narrower than this (a fitted page's body text under ~9 px) takes
# reader mode's room by itself; ⤢ (or a wider window) gives it back.
READABLE_WIDTH = 360
# While an empty reader has yielded its room (a window too narrow for library + chat + a
# readable reader), the library's most of the width beside the chat.
TWO_PANE_LIBRARY_SHARE = 0.45
PANE_MIN_WIDTH = 200
# View menu: the panes a user can hide, by the QSettings key that remembers it.
HIDEABLE_PANES = ("library", "conversations", "citations")
WARM_UP_DELAY_MS = 300  # after the first paint: load the page renderer while the user looks
PREFETCH_PAGES = 6  # cited pages rendered ahead when an answer arrives
DRAG_EVENTS = (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.DragLeave, QEvent.Type.Drop)


def local_paths(event: QDropEvent | QDragEnterEvent) -> list[str]:
    mime = event.mimeData()
    if mime is None or not mime.hasUrls():
        return []
    return [url.toLocalFile() for url in mime.urls() if url.isLocalFile() and url.toLocalFile()]


class MainWindow(QMainWindow):
    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from haiku_desk.views.chat_pane import ChatPane

        self.services = services
        self.setWindowTitle("haiku-desk")
        self.setAccessibleName("haiku-desk")
        self._resize_to_default()
        self.setAcceptDrops(True)

        self.library_pane = LibraryPane(
            services.library, collections=services.collections, evidence=services.evidence
        )
        self.chat_pane = ChatPane(services)
        self.citation_panel = CitationPanel(services.pages, bibliography=services.bibliography)
        self.notification_area = NotificationArea(services.notifications)
        # An empty reader in a window too narrow to read in gives its room to the library and
        # the chat until something opens in it (_fit_empty_reader); not the View menu's hiding.
        self._warmed = False
        self._reader_yielded = False
        self._reader_kept = False  # the person showed the reader from the View menu: it stays
        self._sizes_before_yield: list[int] = []

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setAccessibleName("Panes")
        self.splitter.addWidget(self.library_pane)
        self.splitter.addWidget(self._centre(services))  # the chat, and the evidence table beside it
        self.splitter.addWidget(self.citation_panel)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 4)
        self.splitter.setStretchFactor(2, 3)
        self.splitter.setSizes(list(DEFAULT_PANE_WIDTHS))  # scaled to the window's real width
        # A pane is hidden from the View menu, not by dragging it to nothing by accident.
        self.splitter.setChildrenCollapsible(False)

        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(6, 4, 6, 2)  # the panes off the window's edges (the theme's spacing)
        layout.setSpacing(0)
        layout.addWidget(self.splitter, 1)
        layout.addWidget(self.notification_area)
        self.setCentralWidget(central)

        self.drop_overlay = QLabel("Drop to add to the library", central)
        self.drop_overlay.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.drop_overlay.setAccessibleName("Drop zone")
        self.drop_overlay.setStyleSheet(
            "background: rgba(53, 116, 240, 0.18); border: 3px dashed rgba(53, 116, 240, 0.8);"
            "font-size: 20px; font-weight: bold;"
        )
        self.drop_overlay.hide()

        # View › Reader: the citation panel takes the library's and the conversation list's room
        self.reader_mode = ReaderMode(
            self.splitter, 2, [self.library_pane, self._chat_side(0)], self.chat_pane, f"{SETTINGS_GROUP}/reader_share", self
        )
        self._build_actions()
        self.citation_panel.reader_mode_requested.connect(self.set_reader_mode)
        self.citation_panel.cleared.connect(self._reader_emptied)
        self.citation_panel.opened.connect(self._reader_opened)  # a citation, a document
        self.quit_flow = QuitFlow(services, self)  # closing the window is Quit: asks once if work is pending
        if services.evidence is not None:  # a fill stopped by Quit continues at the next start
            self.quit_flow.closing.connect(services.evidence.halt)
        # File › New/Open/Recent library, Help › Open log folder
        self.library_menu = LibraryMenu(
            self, self.menuBar(), services.library, services.notifications.info, log_folder(services.config)
        )
        self.help_menu.addSeparator()  # Help › About haiku-desk, last (after Open log folder)
        self.about_action = QAction("&About haiku-desk", self)
        self.about_action.setObjectName("about")
        self.about_action.triggered.connect(self.open_about)
        self.help_menu.addAction(self.about_action)
        # File › Recent: a library once it opened (one that fails to open is not remembered)
        services.library.opened.connect(lambda: remember_library(services.library.db_path))
        self.chat_pane.citation_activated.connect(self.show_citation)
        self.library_pane.document_opened.connect(self.show_document)
        self.chat_pane.command_requested.connect(self._run_chat_command)
        services.chat.current_changed.connect(self.citation_panel.follow_conversation)
        self.citation_panel.follow_conversation(services.chat.current)
        # The chat searches what the library's scope control says, kept per conversation.
        scope_changed = getattr(self.library_pane, "scopeChanged", None)
        if scope_changed is not None:
            scope_changed.connect(services.chat.set_scope)
            services.chat.current_changed.connect(lambda _record: self._show_scope())
            # a collection's membership, rename or delete changes what the boxes show
            services.chat.scope_changed.connect(lambda _ids: self._show_scope())
        box = getattr(self.library_pane, "collections_box", None)
        if box is not None:
            box.collectionChosen.connect(services.chat.set_collection_scope)
        services.chat.answer_ready.connect(self._prefetch_sources)
        self._panes_restored = False  # True when QSettings held the user's pane widths
        self._older_layout = False  # those widths were saved by an earlier default layout
        # the first start's layout follows the window (maximised after the first show) until
        # the user drags a splitter
        self._default_panes = True
        self.splitter.splitterMoved.connect(self._panes_dragged)
        self._auto_reader = False  # reader mode taken by a citation in a narrow panel
        self._chat_splitter_state: QByteArray | None = None
        # The library's line is a label of the status bar, not its passing message: a menu
        # item under the pointer shows its status tip there and then clears the message, which
        # took the line away until the next change (tester 16:42, after View › Appearance).
        # A passing message still shows over the label, which comes back after it.
        self.status_label = QLabel()
        self.status_label.setAccessibleName("Library status")
        self.statusBar().addWidget(self.status_label, 1)
        services.library.entry_changed.connect(self._update_status)
        services.library.entry_removed.connect(self._update_status)
        services.library.opened.connect(self._update_status)
        services.library.open_failed.connect(self._update_status)
        self._update_status()
        self._restore_state()
        self._keyboard_focus_chain()
        name_qt_buttons(self)  # Qt's own icon-only buttons (clear, »): named for screen readers
        from haiku_desk.views.pane_focus import PaneFocus

        self.pane_focus = PaneFocus(self, lambda: [pane for pane, _ in self._focus_stops()])  # F6's frame
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self)  # drops on any child widget, even ones that take text drops

    def _centre(self, services: AppServices) -> QWidget:
        """The chat, and the evidence table in a tab beside it (issue 35)."""
        self.centre = QTabWidget()
        self.centre.setDocumentMode(True)
        self.centre.setAccessibleName("Chat and evidence table")
        self.centre.addTab(self.chat_pane, "Chat")
        self.evidence_pane: EvidenceTablePane | None = None
        if services.evidence is not None:
            from haiku_desk.views.evidence_table import EvidenceTablePane

            self.evidence_pane = EvidenceTablePane(services.evidence, ticked=self.library_pane.scope)
            self.evidence_pane.citation_activated.connect(self.show_citation)
            self.centre.addTab(self.evidence_pane, "Evidence table")
        return self.centre

    def _show_new_chat(self) -> None:
        """After New chat (Ctrl+N): the Chat tab shown and its input focused, whichever tab was."""
        if self.centre.currentWidget() is not self.chat_pane:
            self.centre.setCurrentWidget(self.chat_pane)
            self.chat_pane.input.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def show_evidence_table(self) -> None:
        """View › Evidence table (Ctrl+Shift+E): its tab, the table focused; again: the chat."""
        if self.evidence_pane is None:
            return
        if self.centre.currentWidget() is self.evidence_pane:
            self.centre.setCurrentWidget(self.chat_pane)
            self.chat_pane.input.setFocus(Qt.FocusReason.ShortcutFocusReason)
        else:
            self.centre.setCurrentWidget(self.evidence_pane)
            self.evidence_pane.table.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def _show_scope(self) -> None:
        """The library's boxes show the conversation's scope (its collection ticked, if any)."""
        self.library_pane.set_scope(self.services.chat.scope())
        box = getattr(self.library_pane, "collections_box", None)
        if box is not None:
            box.show_chosen(self.services.chat.scope_collection())

    # --- actions ------------------------------------------------------------------------------

    def _build_actions(self) -> None:
        def action(
            text: str,
            slot: Callable[..., object],
            shortcut: QKeySequence | QKeySequence.StandardKey | str | None = None,
            name: str | None = None,
        ) -> QAction:
            a = QAction(text, self)
            if shortcut is not None:
                a.setShortcut(QKeySequence(shortcut))
            a.setToolTip(text.rstrip("…") + (f" ({QKeySequence(shortcut).toString()})" if shortcut else ""))
            a.triggered.connect(slot)
            a.setObjectName(name or text)
            self.addAction(a)
            return a

        pane = self.library_pane
        self.add_files_action = action("Add files…", pane.choose_files, QKeySequence.StandardKey.Open, "add_files")
        self.add_folder_action = action("Add folder…", pane.choose_folder, None, "add_folder")
        self.watch_folder_action = action("Watch folder…", pane.choose_watched_folder, None, "watch_folder")
        self.rescan_action = action("Rescan watched folders", lambda: self.services.library.watch.rescan(), None, "rescan")
        self.zotero_action = action("Import Zotero library…", self.choose_zotero_library, None, "import_zotero")
        self.focus_search_action = action("Focus search", self.focus_search, "Ctrl+K", "focus_search")
        self.evidence_action = action("Evidence table", self.show_evidence_table, "Ctrl+Shift+E", "evidence_table")
        self.models_action = action("Models…", self.open_model_settings, None, "models")
        self.models_action.setShortcuts(preferences_shortcuts())
        self.models_action.setToolTip(f"Models… ({self.models_action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)})")
        self.help_action = action("Keyboard shortcuts", self.open_help, "F1", "help")
        self.help_action.setShortcuts(help_shortcuts())
        self.next_pane_action = action("Next pane", lambda: self.focus_pane(+1), "F6", "next_pane")
        self.previous_pane_action = action("Previous pane", lambda: self.focus_pane(-1), "Shift+F6", "previous_pane")
        self.pane_actions = {
            "library": self._pane_action("Library", "library", "Ctrl+Shift+L"),
            "conversations": self._pane_action("Conversation list", "conversations", "Ctrl+Shift+H"),
            "citations": self._pane_action("Citation panel", "citations", "Ctrl+Shift+P"),
        }
        self.reader_action = action("Reader mode", lambda: self.set_reader_mode(not self.reader_mode.active), "Ctrl+Shift+R", "reader_mode")
        self.reader_action.setCheckable(True)
        # Ctrl+F finds in the document the reader shows, wherever the focus is (the panel's own
        # Ctrl+F, for the panel alone, would make the key ambiguous here)
        self.find_action = action("Find in document…", self._find_in_document, "Ctrl+F", "find_in_document")
        self.citation_panel.find_action.setShortcut(QKeySequence())
        self.quit_action = action("Quit", self.close, QKeySequence.StandardKey.Quit, "quit")
        # Ctrl+N (the chat pane's New chat) from any tab: the action belongs to the window as
        # well, so a hidden Chat tab does not switch it off; it shows the Chat tab first
        self.addAction(self.chat_pane.new_chat_action)
        self.chat_pane.new_chat_action.triggered.connect(self._show_new_chat)

        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        for a in (self.add_files_action, self.add_folder_action, self.watch_folder_action, self.rescan_action, self.zotero_action):
            file_menu.addAction(a)
        file_menu.addSeparator()
        file_menu.addAction(self.chat_pane.export_answer_action)
        file_menu.addAction(self.chat_pane.export_conversation_action)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        view_menu = menu.addMenu("&View")
        for pane_action in self.pane_actions.values():
            view_menu.addAction(pane_action)
        view_menu.addAction(self.reader_action)
        view_menu.addAction(self.find_action)
        view_menu.addSeparator()
        view_menu.addAction(self.evidence_action)
        view_menu.addAction(self.focus_search_action)
        view_menu.addAction(self.next_pane_action)
        view_menu.addAction(self.previous_pane_action)
        view_menu.addSeparator()
        self.appearance_menu = appearance_menu(view_menu)  # Follow the system / Light / Dark
        settings_menu = menu.addMenu("&Settings")
        settings_menu.addAction(self.models_action)
        help_menu = menu.addMenu("&Help")
        help_menu.addAction(self.help_action)
        # Help › Use this library from other apps (MCP)…
        self.mcp = McpAction(self, help_menu, lambda: str(self.services.library.db_path))
        self.help_menu = help_menu
        if self.services.bibliography is not None:
            pane = self.library_pane
            self.details = DetailsAction(self.services.bibliography, self, pane.selected_entries)  # Edit details…
            pane.extra_actions.append(self.details.action)

        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("main_toolbar")
        toolbar.setAccessibleName("Main toolbar")
        toolbar.addAction(self.add_files_action)
        toolbar.addAction(self.watch_folder_action)
        toolbar.addSeparator()
        toolbar.addAction(self.models_action)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        toolbar.setIconSize(QSize(18, 18))
        toolbar.setMovable(False)
        for toolbar_action, icon_name in (
            (self.add_files_action, "add-files"),
            (self.add_folder_action, "add-folder"),
            (self.watch_folder_action, "watch-folder"),
            (self.rescan_action, "rescan"),
            (self.models_action, "settings"),
        ):
            set_icon(toolbar_action, icon_name)
        self.toolbar = toolbar

    def _resize_to_default(self) -> None:
        """The default size, or the screen's available area less the window frame when that
        is smaller (a laptop), centred in it."""
        width, height = DEFAULT_SIZE
        screen = self.screen() or QApplication.primaryScreen()
        if screen is None:
            self.resize(width, height)
            return
        available = screen.availableGeometry()
        width = min(width, available.width() - FRAME_ALLOWANCE[0])
        height = min(height, available.height() - FRAME_ALLOWANCE[1])
        self.resize(width, height)
        self.move(
            available.x() + (available.width() - width - FRAME_ALLOWANCE[0]) // 2,
            available.y() + (available.height() - height - FRAME_ALLOWANCE[1]) // 2,
        )

    # --- panes -------------------------------------------------------------------------------

    def _pin_pane_minimums(self) -> None:
        """Each pane's minimum width is fixed once, from what its controls need now: a label
        whose text grows later (the chat header, a scope, a selection's reason) must not widen
        its pane and so move the splitters; such text elides or wraps instead."""
        self.library_pane.setMinimumWidth(max(PANE_MIN_WIDTH, self.library_pane.minimumSizeHint().width()))
        self.citation_panel.setMinimumWidth(max(PANE_MIN_WIDTH, self.citation_panel.minimumSizeHint().width()))
        self.chat_pane.setMinimumWidth(self.chat_pane.minimumSizeHint().width())

    def _pane_widget(self, name: str) -> QWidget:
        if name == "library":
            return self.library_pane
        if name == "conversations":
            return self._chat_side(0)
        return self.citation_panel

    def _chat_side(self, index: int) -> QWidget:
        """The chat pane's conversation list (0) or its chat column (1)."""
        widget = self.chat_pane.splitter.widget(index)
        assert widget is not None
        return widget

    def _pane_action(self, text: str, name: str, shortcut: str) -> QAction:
        action = QAction(text, self)
        action.setObjectName(f"show_{name}")
        action.setCheckable(True)
        action.setChecked(True)
        action.setShortcut(QKeySequence(shortcut))
        action.setToolTip(f"Show or hide the {text.lower()} ({QKeySequence(shortcut).toString()})")
        action.toggled.connect(lambda shown, n=name: self.set_pane_visible(n, shown))
        self.addAction(action)
        return action

    def set_pane_visible(self, name: str, shown: bool) -> None:
        """Hide or show a pane (View menu); the others keep their widths, the chat takes the
        room. Remembered across starts."""
        self.set_reader_mode(False)  # a pane shown or hidden by hand: the usual layout again
        widget = self._pane_widget(name)
        action = self.pane_actions[name]
        if action.isChecked() != shown:
            action.setChecked(shown)  # re-enters through toggled
            return
        if name == "citations" and self._reader_yielded:
            # the person's own choice from here: hidden, or shown even while empty
            self._reader_yielded = False
            self._reader_kept = shown
            if not shown:
                self._sizes_before_yield = []
                QSettings().setValue(f"{SETTINGS_GROUP}/show_{name}", shown)
                return
        elif name == "citations" and shown:
            self._reader_kept = True
        if widget.isHidden() == (not shown):
            return
        focused = QApplication.focusWidget()
        if not shown and focused is not None and (focused is widget or widget.isAncestorOf(focused)):
            self.chat_pane.input.setFocus(Qt.FocusReason.OtherFocusReason)  # not lost in a hidden pane
        widget.setVisible(shown)
        if shown and name == "citations":
            self._give_reader_room()  # a reader that had yielded its room had none
        settings = QSettings()
        settings.setValue(f"{SETTINGS_GROUP}/show_{name}", shown)

    def set_reader_mode(self, on: bool) -> None:
        """The citation panel with the room of the library and the conversation list (on), or
        the panes as they were (off); see views/reader_mode.py."""
        self._auto_reader = False  # the user's own choice from here (see _make_room_to_read)
        if on:
            self._reveal_citation_panel()
        self.reader_mode.set_active(on)
        for toggle in (self.reader_action, self.citation_panel.reader_button):
            toggle.blockSignals(True)
            toggle.setChecked(on)
            toggle.blockSignals(False)

    def _find_in_document(self) -> None:
        if self.citation_panel.citation is not None:
            self._reveal_citation_panel()
        self.citation_panel.open_find()

    def pane_visible(self, name: str) -> bool:
        return not self._pane_widget(name).isHidden()

    def _focus_stops(self) -> list[tuple[QWidget, QWidget]]:
        """Where F6 goes, as (pane, the widget that takes the focus): the library's table, the
        conversation list, the question box, the citation page (visible panes only)."""
        stops: list[tuple[QWidget, QWidget]] = []
        if self.pane_visible("library"):
            stops.append((self.library_pane, self.library_pane.table))
        evidence = self.evidence_pane
        if evidence is not None and self.centre.currentWidget() is evidence:
            stops.append((evidence, evidence.focus_target()))  # its tab is shown, not the chat's
        else:
            if self.pane_visible("conversations"):
                stops.append((self._chat_side(0), self.chat_pane.conversation_list))
            stops.append((self._chat_side(1), self.chat_pane.input))
        if self.pane_visible("citations"):
            stops.append((self.citation_panel, getattr(self.citation_panel, "scroll", self.citation_panel)))
        return stops

    def focus_pane(self, step: int) -> None:
        """Move the keyboard focus to the next (``step`` 1) or previous (-1) pane."""
        stops = self._focus_stops()
        focused = QApplication.focusWidget()
        current = next(
            (i for i, (pane, _) in enumerate(stops) if focused is not None and (pane is focused or pane.isAncestorOf(focused))),
            None,
        )
        if current is None:
            index = 0 if step > 0 else len(stops) - 1
        else:
            index = (current + step) % len(stops)
        reason = Qt.FocusReason.TabFocusReason if step > 0 else Qt.FocusReason.BacktabFocusReason
        pane_focus = getattr(self, "pane_focus", None)
        if pane_focus is not None:
            pane_focus.follow_keyboard()  # the pane it lands in is framed
        stops[index][1].setFocus(reason)

    def _keyboard_focus_chain(self) -> None:
        """Tab and Shift+Tab move on from text boxes instead of typing a tab (the question box
        sends with Ctrl+Enter, a tab in a question means nothing); the table is one Tab stop."""
        for editor in self.chat_pane.findChildren(QPlainTextEdit) + self.chat_pane.findChildren(QTextEdit):
            if not editor.isReadOnly():
                editor.setTabChangesFocus(True)
        self.library_pane.table.setTabKeyNavigation(False)

    def open_help(self):
        from haiku_desk.views.help_dialog import ShortcutsDialog

        dialog = ShortcutsDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.help_dialog = dialog
        return dialog

    def open_about(self):
        from haiku_desk.services.about import about_facts
        from haiku_desk.views.help_dialog import AboutDialog

        facts = about_facts(self.services.library.db_path, self.services.config)
        dialog = AboutDialog(facts, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.about_dialog = dialog
        return dialog

    def choose_zotero_library(self) -> None:
        from pathlib import Path

        from PySide6.QtWidgets import QFileDialog

        folder = QFileDialog.getExistingDirectory(self, "Zotero data directory", str(Path.home() / "Zotero"))
        if folder:
            self.services.library.import_zotero(folder)

    def focus_search(self) -> None:
        self.library_pane.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.library_pane.search.selectAll()

    def open_model_settings(self):
        from haiku_desk.views.settings_dialog import ModelSettingsDialog

        dialog = ModelSettingsDialog(self.services.models, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.model_settings_dialog = dialog
        return dialog

    def _run_chat_command(self, command: str) -> None:
        """A link in an answer: "add-files" or "models"."""
        if command == "add-files":
            self.library_pane.choose_files()
        elif command == "models":
            self.open_model_settings()

    def show_citation(self, citation: Citation) -> None:
        self._reveal_citation_panel()
        self._make_room_to_read()
        self.citation_panel.show_citation(citation)

    def _reader_opened(self) -> None:
        """Something opens in the reader: its room back if it had yielded it, and, in the
        default layout of a wide window, the reading share (READING_SHARE)."""
        self._fit_empty_reader()
        self._follow_default_layout()

    def _follow_default_layout(self) -> None:
        if not self._warmed or self.reader_mode.active or not self._default_panes or self._panes_restored:
            return
        if self.library_pane.isHidden() or self.citation_panel.isHidden():
            return
        self.apply_default_layout()

    def _make_room_to_read(self) -> None:
        """A panel too narrow to read a page in (a 1024×640 window) takes reader mode's room
        (the library's and the conversation list's); ⤢ gives it back, and so does a window
        widened enough for the usual layout."""
        if self.reader_mode.active or not self.isVisible():
            return
        if self.citation_panel.width() < READABLE_WIDTH:
            self.set_reader_mode(True)
            self._auto_reader = True

    def _reader_emptied(self) -> None:
        """Reader mode the app took for a citation ends when the reader has nothing to show
        (a new chat, another conversation): the library and the conversations come back
        (tester 16:59: the window stayed the chat beside an empty reader). Reader mode the
        person chose stays."""
        if self.reader_mode.active and getattr(self, "_auto_reader", False):
            self.set_reader_mode(False)
        self._fit_empty_reader()
        self._follow_default_layout()  # the empty reader's share again

    def _panes_dragged(self, _pos: int, _index: int) -> None:
        self._default_panes = False

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if not getattr(self, "_warmed", False):
            return
        if self.reader_mode.active:
            if self._auto_reader and self._usual_reader_width() >= READABLE_WIDTH:
                self.set_reader_mode(False)  # room enough now in the usual layout
            return
        self._fit_empty_reader()  # yields or takes back its room as the width says
        reader_there = self._reader_yielded or not self.citation_panel.isHidden()
        if self._default_panes and not self._panes_restored and not self.library_pane.isHidden() and reader_there:
            self.apply_default_layout()

    def _usual_reader_width(self) -> int:
        """The citation panel's width if reader mode gave the panes back now."""
        sizes = self.reader_mode._sizes
        if not sizes or sum(sizes) <= 0:
            return 0
        return int(sizes[2] * sum(self.splitter.sizes()) / sum(sizes))

    def _reveal_citation_panel(self) -> None:
        self._set_reader_yielded(False)  # something opens in it: it takes its place
        if not self.pane_visible("citations"):
            self.set_pane_visible("citations", True)
        self._give_reader_room()

    def _give_reader_room(self) -> None:
        sizes = self.splitter.sizes()
        if sizes[2] == 0 and self._default_panes and not self._panes_restored:
            self.apply_default_layout()
            sizes = self.splitter.sizes()
        if sizes[2] == 0:  # the panel was collapsed: bring it back
            sizes[2] = max(360, sum(sizes) // 3)
            sizes[1] = max(200, sizes[1] - sizes[2])
            self.splitter.setSizes(sizes)

    def show_document(self, document_id: str, title: str) -> None:
        """A library document opened for reading, from its first page, in the citation panel."""
        self._reveal_citation_panel()
        self._make_room_to_read()
        self.citation_panel.show_document(document_id, title)

    def _prefetch_sources(self, _conversation_id: str, turn: Turn) -> None:
        """Render an answer's first cited pages now, at the panel's zoom, so a click shows them
        from the cache."""
        zoom = self.citation_panel.render_zoom()
        seen: set[tuple[str, int]] = set()
        for citation in turn.citations:
            key = (citation.document_id, opening_page(citation))  # the page a click shows first
            if key not in seen:
                seen.add(key)
                self.services.pages.prefetch(*key, zoom)
            if len(seen) >= PREFETCH_PAGES:
                break

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._warmed:
            self._warmed = True
            self._pin_pane_minimums()  # now that the labels hold their first texts
            if not self._panes_restored:
                self.apply_default_layout()
            elif self._older_layout:
                self._widen_older_library()
            self._fit_empty_reader()
            if self._chat_splitter_state is not None:
                # Restored before the chat pane had its real width, the conversation list
                # may have been squeezed on the way: the user's width again, now.
                self.chat_pane.splitter.restoreState(self._chat_splitter_state)
            QTimer.singleShot(WARM_UP_DELAY_MS, self, self._warm_up_renderer_when_useful)
            QTimer.singleShot(WARM_UP_DELAY_MS, self, self._install_fallback_font)

    def _warm_up_renderer_when_useful(self) -> None:
        """Load the page renderer (PyMuPDF, ~35 MB resident) once the library holds a document
        a citation could show, not before: an empty library stays light while it waits."""
        library = self.services.library
        if library.is_opening:  # the store opens first (LanceDB's import); the rows already show

            def after_open() -> None:
                library.opened.disconnect(after_open)
                self._warm_up_renderer_when_useful()

            library.opened.connect(after_open)
            return
        if any(entry.searchable for entry in library.entries):
            self.services.pages.warm_up()
            return

        def on_entry(entry: object) -> None:
            if getattr(entry, "searchable", False):
                library.entry_changed.disconnect(on_entry)
                self.services.pages.warm_up()

        library.entry_changed.connect(on_entry)

    def _install_fallback_font(self) -> None:
        """CJK titles and passages draw as text, not boxes (see views/fonts.py); once the
        library is open (PyMuPDF's import would slow LanceDB's, and the new font lays out
        every widget again)."""
        import asyncio

        library = self.services.library
        if library.is_opening:

            def after_open() -> None:
                library.opened.disconnect(after_open)
                self._install_fallback_font()

            library.opened.connect(after_open)
            return

        from haiku_desk.views.fonts import install_fallback_font_later

        self._font_task = asyncio.ensure_future(install_fallback_font_later())
        self._font_task.add_done_callback(lambda _task: self._fallback_font_installed())

    def _fallback_font_installed(self) -> None:
        """Text laid out before the fallback font came in, laid out again (its CJK glyphs
        were measured with other ones and drew clipped)."""
        if self.isVisible():
            self.chat_pane.relayout_text()

    def apply_default_layout(self) -> None:
        """Pane widths for a first start (and, until the user drags a splitter, for every new
        window size: a window maximised after its first show is laid out for its new width, not
        stretched by the stretch factors, which gave the chat ~1160 px of 1920 and the reader
        ~500); see default_pane_widths. An empty reader in a window too narrow to read in
        yields its room (_fit_empty_reader): the library and the chat share the width."""
        if self._reader_yielded:
            self.splitter.setSizes(self._two_pane_widths())
            return
        sizes, _readable = self.default_pane_widths()
        if sizes is not None:
            self.splitter.setSizes(sizes)

    def _splitter_total(self) -> int:
        return self.splitter.width() - 2 * self.splitter.handleWidth()

    def default_pane_widths(self) -> tuple[list[int] | None, bool]:
        """The first start's library | chat | reader widths for the splitter's width, and
        whether the reader gets READABLE_WIDTH in them (None: leave the panes as they are).

        The library gets what its controls need (or LIBRARY_WIDE_SHARE of the
        window when that is more, or what its titles need to be readable when the reader and the
        chat keep their widths), the citation panel READER_SHARE of the rest, the chat the
        remainder: as much as its conversation list and its toggles on one row need, when the
        reader keeps READABLE_WIDTH beside it; else the reader READABLE_WIDTH and the chat the
        rest down to its minimum width (its toggles wrap onto more rows). A cited page then
        opens readable in place at 1280×800 instead of taking reader mode's room: with the real
        UI font (DejaVu Sans) the one-row chat took 746 px there and left the reader 226.
        In a window too narrow for that, the library its controls' width, the chat what it can
        keep down to its least width, the reader the rest (else each its minimum width)."""
        total = self._splitter_total()
        chat = self.chat_pane.default_width()
        chat_least = max(self.chat_pane.minimumWidth(), self.chat_pane.minimumSizeHint().width())
        library_need = max(PANE_MIN_WIDTH, self.library_pane.minimumSizeHint().width())
        library = max(library_need, int(total * LIBRARY_WIDE_SHARE))
        # Titles readable (~42 characters beside whole badges) when the reader keeps
        # READABLE_WIDTH and the chat its comfortable width: at 1440x900 the library had 315 px
        # and cut 24 titles to ~18 characters while the empty conversation list and the idle
        # reader kept theirs.
        spare = total - READABLE_WIDTH - max(chat_least, min(chat, CHAT_COMFORT_WIDTH))
        library = max(library, min(self.library_pane.readable_width(), spare))
        beside = total - library
        reader = int(beside * (READER_SHARE if self._reader_is_empty() else READING_SHARE))
        if beside - reader < chat:
            # the chat's one row of toggles, unless that leaves the reader unreadable
            reader = max(beside - chat, min(READABLE_WIDTH, beside - chat_least))
        if reader >= READABLE_WIDTH:
            return [library, beside - reader, reader], True
        # Too narrow (1024x640): only a reader with something in it is here (an empty one
        # yields its room), so it gets what the chat can give down to its least width (its
        # toggles wrap) and the library its controls' width: a cited page beside a ~300 px
        # chat, not ~200 px wide (tester 19:39, after leaving reader mode).
        chat = max(chat_least, min(chat, total - library_need - READABLE_WIDTH))
        rest = total - chat
        library = min(library_need, rest - PANE_MIN_WIDTH)
        if min(library, rest - library) < PANE_MIN_WIDTH:
            library, rest = PANE_MIN_WIDTH, 2 * PANE_MIN_WIDTH
            chat = total - rest
            if chat <= self.splitter.sizes()[1]:
                return None, False
        return [library, chat, rest - library], False

    def _two_pane_widths(self) -> list[int]:
        """Library | chat | 0 while an empty reader has yielded its room: the library what
        its titles need to be readable while the chat keeps its comfortable width (never less
        than its controls need, never more than TWO_PANE_LIBRARY_SHARE of the width), the chat
        the rest. At 1024×640 the first start gave ~300 | ~300 | ~210 (an idle reader beside a
        chat too narrow to read an answer in, and cut titles)."""
        total = self.splitter.width() - self.splitter.handleWidth()
        chat = self.chat_pane.default_width()
        chat_least = max(self.chat_pane.minimumWidth(), self.chat_pane.minimumSizeHint().width())
        library_need = max(PANE_MIN_WIDTH, self.library_pane.minimumSizeHint().width())
        chat_keeps = max(chat_least, min(chat, CHAT_COMFORT_WIDTH))
        library = max(library_need, min(self.library_pane.readable_width(), total - chat_keeps))
        library = max(library_need, min(library, int(total * TWO_PANE_LIBRARY_SHARE)))
        return [library, total - library, 0]

    # --- an empty reader in a narrow window ------------------------------------------------

    def _reader_is_empty(self) -> bool:
        return self.citation_panel.citation is None

    def _should_yield_reader(self) -> bool:
        """An empty reader yields its room when the window cannot give the library, the chat
        and a readable reader (READABLE_WIDTH) their widths, unless the person showed it
        from the View menu while it was yielded or it is reader mode's."""
        if not self._warmed or self.reader_mode.active or self._reader_kept:
            return False
        if not self.pane_actions["citations"].isChecked() or not self._reader_is_empty():
            return False
        if self.library_pane.isHidden():  # the chat has the library's room already
            return False
        _sizes, readable = self.default_pane_widths()
        return not readable

    def _fit_empty_reader(self) -> None:
        """Yield or take back the empty reader's room as the window's width and the reader's
        content say (see _should_yield_reader)."""
        if getattr(self, "_fitting_reader", False):
            return
        self._fitting_reader = True
        try:
            self._set_reader_yielded(self._should_yield_reader())
        finally:
            self._fitting_reader = False

    def _set_reader_yielded(self, on: bool) -> None:
        if on == self._reader_yielded:
            return
        if on:
            self._sizes_before_yield = self.splitter.sizes()
            self._reader_yielded = True
            self.citation_panel.hide()
            sizes = self._sizes_before_yield
            if self._default_panes and not self._panes_restored:
                self.splitter.setSizes(self._two_pane_widths())
            elif len(sizes) == 3:  # the person's library width; the chat takes the reader's room
                self.splitter.setSizes([sizes[0], sizes[1] + sizes[2], 0])
            return
        self._reader_yielded = False
        library_now = self.splitter.sizes()[0]
        self.citation_panel.show()
        if self._default_panes and not self._panes_restored:
            self.apply_default_layout()
        elif self._sizes_before_yield:
            # the person's widths: the reader's as it was, the library's as it is now
            before = self._sizes_before_yield
            total = sum(self.splitter.sizes())
            reader = before[2] if before[2] > 0 else max(READABLE_WIDTH, total // 3)
            chat_least = max(self.chat_pane.minimumWidth(), self.chat_pane.minimumSizeHint().width())
            reader = max(PANE_MIN_WIDTH, min(reader, total - library_now - chat_least))
            self.splitter.setSizes([library_now, max(0, total - library_now - reader), reader])
        self._sizes_before_yield = []

    def _widen_older_library(self) -> None:
        """Panes saved by an earlier default layout: a library narrower than today's default
        gives it takes the default layout (wider titles); otherwise the saved widths stay."""
        if any(pane.isHidden() for pane in (self.library_pane, self.citation_panel)):
            return
        saved = self.splitter.sizes()
        self.apply_default_layout()
        if self.splitter.sizes()[0] <= saved[0]:
            self.splitter.setSizes(saved)

    def _update_status(self, *_: object) -> None:
        entries = self.services.library.entries
        searchable = sum(1 for e in entries if e.searchable)
        failed = sum(1 for e in entries if e.state is DocumentState.FAILED)
        text = f"{searchable} document{'s' if searchable != 1 else ''} searchable"
        if self.services.library.is_opening:
            text = "Opening the library…"
        if failed:
            text += f" · {failed} failed"
        self.status_label.setText(f"{text} · {self.services.library.db_path}")

    # --- drops anywhere -------------------------------------------------------------------------

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in DRAG_EVENTS and isinstance(watched, QWidget) and watched.window() is self:
            return self._drag_event(event)
        return super().eventFilter(watched, event)

    def _drag_event(self, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.DragLeave:
            self.drop_overlay.hide()
            return False
        assert isinstance(event, QDropEvent)
        paths = local_paths(event)
        if not paths:
            return False
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            event.setDropAction(Qt.DropAction.CopyAction)
            event.accept()
            if kind == QEvent.Type.DragEnter:
                central = self.centralWidget()
                assert central is not None  # set in __init__
                self.drop_overlay.setGeometry(central.rect())
                self.drop_overlay.raise_()
                self.drop_overlay.show()
            return True
        self.drop_overlay.hide()
        event.setDropAction(Qt.DropAction.CopyAction)
        event.accept()
        self.services.library.add_paths(paths)
        return True

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if not self._drag_event(event):
            super().dragEnterEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:
        if not self._drag_event(event):
            super().dropEvent(event)

    # --- window state ---------------------------------------------------------------------------

    def _restore_state(self) -> None:
        settings = QSettings()
        settings.beginGroup(SETTINGS_GROUP)
        geometry = settings.value("geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)  # Qt brings it inside a smaller screen itself
        state = settings.value("state")
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state)
        splitter = settings.value("splitter")
        # the widths a person dragged (in this session or an earlier one); widths saved without
        # a drag were the default layout's for that window, which follows the window instead
        # (profiles saved before this flag: kept as the person's)
        dragged = settings.value("panes_dragged", True, type=bool)
        if isinstance(splitter, QByteArray) and not splitter.isEmpty() and dragged:
            self._panes_restored = self.splitter.restoreState(splitter)
            version = settings.value("layout_version", 0, type=int)
            self._older_layout = not isinstance(version, int) or version < LAYOUT_VERSION
        chat_splitter = settings.value("chat_splitter")
        if isinstance(chat_splitter, QByteArray) and not chat_splitter.isEmpty():
            self.chat_pane.splitter.restoreState(chat_splitter)
            self._chat_splitter_state = chat_splitter  # again at the first show (see showEvent)
        # the tab beside the chat the user was on (the Evidence table stays where it was left)
        if settings.value("centre_tab", "chat") == "evidence" and self.evidence_pane is not None:
            self.centre.setCurrentWidget(self.evidence_pane)
        shown = {name: settings.value(f"show_{name}", True, type=bool) for name in HIDEABLE_PANES}
        settings.endGroup()
        for name, visible in shown.items():
            if not visible:
                self.pane_actions[name].setChecked(False)

    def save_state(self) -> None:
        settings = QSettings()
        settings.beginGroup(SETTINGS_GROUP)
        settings.setValue("geometry", self.saveGeometry())
        settings.setValue("state", self.saveState())
        settings.setValue("splitter", self.splitter.saveState())
        settings.setValue("panes_dragged", self._panes_restored or not self._default_panes)
        settings.setValue("layout_version", LAYOUT_VERSION)
        settings.setValue("chat_splitter", self.chat_pane.splitter.saveState())
        on_evidence = self.evidence_pane is not None and self.centre.currentWidget() is self.evidence_pane
        settings.setValue("centre_tab", "evidence" if on_evidence else "chat")
        settings.endGroup()
        settings.sync()

    def closeEvent(self, event) -> None:
        if not self.quit_flow.allow_close():
            event.ignore()
            return
        self.set_reader_mode(False)  # the panes' usual widths are the ones saved
        self._reader_kept = True
        self._set_reader_yielded(False)  # the reader's width is saved, not a yielded 0
        self.save_state()
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
        super().closeEvent(event)


def preferences_shortcuts() -> list[QKeySequence]:
    """The platform's Preferences keys, and Ctrl+, wherever the platform names none (a bare X
    session, Windows): Ctrl+, is what Linux desktop apps use."""
    keys = list(QKeySequence.keyBindings(QKeySequence.StandardKey.Preferences))
    comma = QKeySequence("Ctrl+,")
    if comma not in keys:
        keys.append(comma)
    return keys


def help_shortcuts() -> list[QKeySequence]:
    keys = list(QKeySequence.keyBindings(QKeySequence.StandardKey.HelpContents))
    if QKeySequence("F1") not in keys:
        keys.insert(0, QKeySequence("F1"))
    return keys
