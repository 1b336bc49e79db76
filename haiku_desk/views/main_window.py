"""The main window: library pane | chat | citation panel, with the notification area below.

Files and folders dropped anywhere on the window (chat input included) go to the library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow, QSplitter, QVBoxLayout, QWidget

from haiku_desk.views.citation_panel import CitationPanel, cited_pages
from haiku_desk.views.library_pane import LibraryPane
from haiku_desk.views.notification_area import NotificationArea
from haiku_desk.views.quit_dialog import QuitFlow

if TYPE_CHECKING:
    from haiku.rag.capabilities.state import Citation
    from haiku_desk.services import AppServices
    from haiku_desk.services.conversations import Turn

SETTINGS_GROUP = "main_window"
DEFAULT_SIZE = (1440, 900)
# library | chat | citation panel before the window knows its width; at the first show the chat
# gets what its conversation list and toolbar need and the others share the rest (LIBRARY_SHARE).
DEFAULT_PANE_WIDTHS = (345, 690, 393)
LIBRARY_SHARE = 0.5
PANE_MIN_WIDTH = 240
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

        self.library_pane = LibraryPane(services.library)
        self.chat_pane = ChatPane(services)
        self.citation_panel = CitationPanel(services.pages)
        self.notification_area = NotificationArea(services.notifications)

        # Explicit minimums: otherwise the panes' button rows add up to a window too wide for a laptop.
        self.library_pane.setMinimumWidth(PANE_MIN_WIDTH)
        self.citation_panel.setMinimumWidth(PANE_MIN_WIDTH)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setAccessibleName("Panes")
        self.splitter.addWidget(self.library_pane)
        self.splitter.addWidget(self.chat_pane)
        self.splitter.addWidget(self.citation_panel)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 4)
        self.splitter.setStretchFactor(2, 3)
        self.splitter.setSizes(list(DEFAULT_PANE_WIDTHS))  # scaled to the window's real width
        self.splitter.setChildrenCollapsible(True)

        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
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

        self._build_actions()
        self.quit_flow = QuitFlow(services, self)  # closing the window is Quit: asks once if work is pending
        from haiku_desk.views.library_menu import LibraryMenu

        self.library_menu = LibraryMenu(self)  # File › New/Open/Recent library, Help › Open log folder
        self.chat_pane.citation_activated.connect(self.show_citation)
        services.chat.answer_ready.connect(self._prefetch_cited_pages)
        self._warmed = False
        self._panes_restored = False  # True when QSettings held the user's pane widths
        services.library.entry_changed.connect(self._update_status)
        services.library.entry_removed.connect(self._update_status)
        services.library.opened.connect(self._update_status)
        services.library.open_failed.connect(self._update_status)
        self._update_status()
        self._restore_state()
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self)  # drops on any child widget, even ones that take text drops

    # --- actions ------------------------------------------------------------------------------

    def _build_actions(self) -> None:
        def action(text: str, slot, shortcut: QKeySequence | str | None = None, name: str | None = None) -> QAction:  # type: ignore[no-untyped-def]
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
        self.rescan_action = action("Rescan watched folders", lambda: self.services.library.rescan(), None, "rescan")
        self.focus_search_action = action("Focus search", self.focus_search, "Ctrl+K", "focus_search")
        self.models_action = action("Models…", self.open_model_settings, None, "models")
        self.quit_action = action("Quit", self.close, QKeySequence.StandardKey.Quit, "quit")

        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        for a in (self.add_files_action, self.add_folder_action, self.watch_folder_action, self.rescan_action):
            file_menu.addAction(a)
        file_menu.addSeparator()
        file_menu.addAction(self.chat_pane.export_answer_action)
        file_menu.addAction(self.chat_pane.export_conversation_action)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        view_menu = menu.addMenu("&View")
        view_menu.addAction(self.focus_search_action)
        settings_menu = menu.addMenu("&Settings")
        settings_menu.addAction(self.models_action)

        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("main_toolbar")
        toolbar.setAccessibleName("Main toolbar")
        toolbar.addAction(self.add_files_action)
        toolbar.addAction(self.watch_folder_action)
        toolbar.addSeparator()
        toolbar.addAction(self.models_action)
        self.toolbar = toolbar

    def _resize_to_default(self) -> None:
        width, height = DEFAULT_SIZE
        screen = self.screen() or QApplication.primaryScreen()
        if screen is not None:  # a laptop's smaller screen: fit it
            available = screen.availableGeometry()
            width, height = min(width, available.width()), min(height, available.height())
        self.resize(width, height)

    def focus_search(self) -> None:
        self.library_pane.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.library_pane.search.selectAll()

    def open_model_settings(self):  # type: ignore[no-untyped-def]
        from haiku_desk.views.settings_dialog import ModelSettingsDialog

        dialog = ModelSettingsDialog(self.services.models, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.model_settings_dialog = dialog
        return dialog

    def show_citation(self, citation: Citation) -> None:
        sizes = self.splitter.sizes()
        if sizes[2] == 0:  # the panel was collapsed: bring it back
            sizes[2] = max(360, sum(sizes) // 3)
            sizes[1] = max(200, sizes[1] - sizes[2])
            self.splitter.setSizes(sizes)
        self.citation_panel.show_citation(citation)

    def _prefetch_cited_pages(self, _conversation_id: str, turn: Turn) -> None:
        """Render an answer's first cited pages now, at the panel's zoom, so a click shows them
        from the cache."""
        zoom = self.citation_panel.render_zoom()
        seen: set[tuple[str, int]] = set()
        for citation in turn.citations:
            matched = sorted({b.page for b in citation.boxes}) or cited_pages(citation)
            key = (citation.document_id, matched[0])  # the page a click shows first
            if key not in seen:
                seen.add(key)
                self.services.pages.prefetch(*key, zoom)
            if len(seen) >= PREFETCH_PAGES:
                break

    def showEvent(self, event) -> None:  # type: ignore[no-untyped-def]
        super().showEvent(event)
        if not self._warmed:
            self._warmed = True
            if not self._panes_restored:
                self.apply_default_layout()
            QTimer.singleShot(WARM_UP_DELAY_MS, self, self.services.pages.warm_up)

    def apply_default_layout(self) -> None:
        """Pane widths for a first start: the chat as wide as its conversation list and toolbar
        need (so no toggle hides behind "››"), the library and the citation panel share the
        rest. In a window too narrow for that, the library and the citation panel get their
        minimum width and the chat the rest, when that is more than its proportional share."""
        handle = self.splitter.handleWidth()
        total = self.splitter.width() - 2 * handle
        chat = self.chat_pane.default_width()
        rest = total - chat
        # the library's button row fits whole when the citation panel can spare it
        library_need = self.library_pane.minimumSizeHint().width()
        library = max(int(rest * LIBRARY_SHARE), min(library_need, rest - PANE_MIN_WIDTH))
        if min(library, rest - library) < PANE_MIN_WIDTH:
            library, rest = PANE_MIN_WIDTH, 2 * PANE_MIN_WIDTH
            chat = total - rest
            if chat <= self.splitter.sizes()[1]:
                return
        self.splitter.setSizes([library, chat, rest - library])

    def _update_status(self, *_: object) -> None:
        entries = self.services.library.entries
        searchable = sum(1 for e in entries if e.searchable)
        failed = sum(1 for e in entries if e.reason and not e.searchable)
        text = f"{searchable} document{'s' if searchable != 1 else ''} searchable"
        if self.services.library.is_opening:
            text = "Opening the library…"
        if failed:
            text += f" · {failed} failed"
        self.statusBar().showMessage(f"{text} · {self.services.library.db_path}")

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
                self.drop_overlay.setGeometry(self.centralWidget().rect())
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
            self.restoreGeometry(geometry)
        state = settings.value("state")
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state)
        splitter = settings.value("splitter")
        if isinstance(splitter, QByteArray) and not splitter.isEmpty():
            self._panes_restored = self.splitter.restoreState(splitter)
        chat_splitter = settings.value("chat_splitter")
        if isinstance(chat_splitter, QByteArray) and not chat_splitter.isEmpty():
            self.chat_pane.splitter.restoreState(chat_splitter)
        settings.endGroup()

    def save_state(self) -> None:
        settings = QSettings()
        settings.beginGroup(SETTINGS_GROUP)
        settings.setValue("geometry", self.saveGeometry())
        settings.setValue("state", self.saveState())
        settings.setValue("splitter", self.splitter.saveState())
        settings.setValue("chat_splitter", self.chat_pane.splitter.saveState())
        settings.endGroup()
        settings.sync()

    def closeEvent(self, event) -> None:  # type: ignore[no-untyped-def]
        if not self.quit_flow.allow_close():
            event.ignore()
            return
        self.save_state()
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
        super().closeEvent(event)
