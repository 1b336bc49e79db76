"""The library pane: documents with their state and progress, adding, watch folders, and the
selection that scopes the chat. Files can also be dropped anywhere on the main window."""

from __future__ import annotations

from PySide6.QtCore import QSize, QSortFilterProxyModel, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QProgressBar,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionProgressBar,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from haiku.rag.ingest import formats
from haiku_desk.models.documents import (
    ENTRY_ROLE,
    NAME,
    PROGRESS,
    PROGRESS_ROLE,
    STATE,
    DocumentsModel,
)
from haiku_desk.services.library import LibraryEntry, LibraryService
from haiku_desk.views.widgets import compact_button

EMPTY_HINT = "Drop PDFs or folders anywhere on this window, or use “Add files…”."


class _ProgressDelegate(QStyledItemDelegate):
    """A progress bar in the progress column while a document is being worked on."""

    def paint(self, painter, option, index) -> None:  # type: ignore[no-untyped-def]
        percent = index.data(PROGRESS_ROLE)
        if index.column() != PROGRESS or percent is None:
            super().paint(painter, option, index)
            return
        bar = QStyleOptionProgressBar()
        bar.rect = option.rect.adjusted(2, 3, -2, -3)
        bar.minimum, bar.maximum = 0, 0 if percent < 0 else 100
        bar.progress = max(0, percent)
        bar.text = index.data(Qt.ItemDataRole.DisplayRole) or ""
        bar.textVisible = True
        bar.state = option.state | QStyle.StateFlag.State_Horizontal  # else Fusion fills it bottom-up
        style = option.widget.style() if option.widget else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter)


class _SnugHeader(QHeaderView):
    """Sections sized to their contents reserve room for the sort arrow only where it is shown,
    so the narrow State and Progress columns leave the width to the document names."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.setSectionsClickable(True)
        self.setHighlightSections(True)

    def sectionSizeFromContents(self, logical_index: int) -> QSize:  # noqa: N802
        size = super().sectionSizeFromContents(logical_index)
        if self.isSortIndicatorShown() and logical_index != self.sortIndicatorSection():
            margin = self.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMargin, None, self)
            size.setWidth(size.width() - size.height() - margin)  # what Qt adds for the arrow
        return size


class LibraryPane(QWidget):
    add_files_requested = Signal()

    def __init__(self, library: LibraryService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.library = library
        self.setAccessibleName("Library")
        self.password_dialog: QInputDialog | None = None
        self._password_queue: list[str] = []

        title = QLabel("<b>Library</b>")
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter documents  (Ctrl+K)")
        self.search.setAccessibleName("Filter documents")
        self.search.setClearButtonEnabled(True)

        self.add_files_button = QPushButton("Add files…")
        self.add_files_button.setAccessibleName("Add files")
        self.add_files_button.setToolTip("Add PDFs and other documents (Ctrl+O)")
        self.add_folder_button = QPushButton("Add folder…")
        self.add_folder_button.setAccessibleName("Add folder")
        self.watch_button = QPushButton("Watch folder…")
        self.watch_button.setAccessibleName("Watch folder")
        self.watch_button.setToolTip("Add a folder and keep the library in sync with it")

        self.model = DocumentsModel(library, self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setFilterKeyColumn(NAME)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.search.textChanged.connect(self.proxy.setFilterFixedString)

        self.table = QTableView()
        self.table.setAccessibleName("Documents")
        self.table.setModel(self.proxy)
        self.table.setItemDelegate(_ProgressDelegate(self.table))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setSortingEnabled(True)
        self.proxy.setSortCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.table.sortByColumn(NAME, Qt.SortOrder.AscendingOrder)  # Qt's default is Z to A
        self.table.verticalHeader().hide()
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)  # a long name ends in "…"; its tooltip holds all of it
        self.table.setHorizontalHeader(_SnugHeader(self.table))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(NAME, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(STATE, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(PROGRESS, QHeaderView.ResizeMode.ResizeToContents)
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self.table.doubleClicked.connect(self._activated)

        self.empty_hint = QLabel(EMPTY_HINT)
        self.empty_hint.setWordWrap(True)
        self.empty_hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_hint.setAccessibleName("Library is empty")

        self.reason = QLabel()
        self.reason.setWordWrap(True)
        self.reason.setAccessibleName("Why the document failed")
        self.reason.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.reason.hide()

        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setAccessibleName("Cancel ingestion of the selected documents")
        self.reingest_button = QPushButton("Re-ingest")
        self.reingest_button.setAccessibleName("Re-ingest the selected documents")
        self.delete_button = QPushButton("Delete")
        self.delete_button.setAccessibleName("Delete the selected documents")
        self.unlock_button = QPushButton("Password…")
        self.unlock_button.setAccessibleName("Enter the password of the selected PDF")

        self.overall = QProgressBar()
        self.overall.setAccessibleName("Overall progress")
        self.overall.setTextVisible(True)
        self.overall.hide()
        self.scope_label = QLabel()
        self.scope_label.setAccessibleName("Chat scope")

        self.watched = QListWidget()
        self.watched.setAccessibleName("Watched folders")
        self.watched.setMaximumHeight(80)
        self.rescan_button = QPushButton("Rescan")
        self.rescan_button.setAccessibleName("Rescan watched folders")
        self.unwatch_button = QPushButton("Stop watching")
        self.unwatch_button.setAccessibleName("Stop watching the selected folder")
        self.watched_box = QWidget()
        wl = QVBoxLayout(self.watched_box)
        wl.setContentsMargins(0, 0, 0, 0)
        wl.addWidget(QLabel("Watched folders"))
        wl.addWidget(self.watched)
        wrow = QHBoxLayout()
        wrow.addWidget(self.rescan_button)
        wrow.addWidget(self.unwatch_button)
        wl.addLayout(wrow)
        self.watched_box.hide()

        adds = QHBoxLayout()
        for b in (self.add_files_button, self.add_folder_button, self.watch_button):
            adds.addWidget(compact_button(b))
        actions = QHBoxLayout()
        for b in (self.cancel_button, self.reingest_button, self.delete_button, self.unlock_button):
            actions.addWidget(compact_button(b))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(title)
        layout.addLayout(adds)
        layout.addWidget(self.search)
        layout.addWidget(self.empty_hint)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.reason)
        layout.addLayout(actions)
        layout.addWidget(self.overall)
        layout.addWidget(self.scope_label)
        layout.addWidget(self.watched_box)

        self.add_files_button.clicked.connect(self.add_files_requested)
        self.add_files_requested.connect(self.choose_files)
        self.add_folder_button.clicked.connect(self.choose_folder)
        self.watch_button.clicked.connect(self.choose_watched_folder)
        self.cancel_button.clicked.connect(lambda: library.cancel(self.selected_keys()))
        self.reingest_button.clicked.connect(lambda: library.reingest(self.selected_keys()))
        self.delete_button.clicked.connect(lambda: library.delete(self.selected_keys()))
        self.unlock_button.clicked.connect(self._unlock_selected)
        self.rescan_button.clicked.connect(lambda: library.rescan())
        self.unwatch_button.clicked.connect(self._unwatch_selected)

        library.entry_changed.connect(self._entries_changed)
        library.entry_removed.connect(self._entries_changed)
        library.overall_progress.connect(self._overall)
        library.password_required.connect(self._password_required)
        library.watched_folders_changed.connect(self._watched_changed)
        library.selection_changed.connect(self._scope_changed)
        self._watched_changed(library.watched_folders)
        self._entries_changed()
        self._scope_changed(library.selected_document_ids)

    # --- state ------------------------------------------------------------------------------

    def entries(self) -> list[LibraryEntry]:
        return [self.model.entry_at(r) for r in range(self.model.rowCount())]

    def selected_entries(self) -> list[LibraryEntry]:
        rows = self.table.selectionModel().selectedRows()
        return [self.proxy.data(index, ENTRY_ROLE) for index in rows]

    def selected_keys(self) -> list[str]:
        return [e.key for e in self.selected_entries()]

    def select_keys(self, keys: list[str]) -> None:
        """Select rows by entry key (as a user's ctrl-click would)."""
        from PySide6.QtCore import QItemSelection, QItemSelectionModel

        selection = QItemSelection()
        for key in keys:
            source = self.model.index(self.model.row_of(key), 0)
            index = self.proxy.mapFromSource(source)
            selection.select(index, index)
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        self.table.selectionModel().select(selection, flags)

    def _entries_changed(self, *_: object) -> None:
        empty = self.model.rowCount() == 0
        self.empty_hint.setVisible(empty)
        self._update_buttons()

    def _update_buttons(self) -> None:
        selected = self.selected_entries()
        self.cancel_button.setEnabled(any(e.busy for e in selected))
        self.reingest_button.setEnabled(any(not e.busy for e in selected))
        self.delete_button.setEnabled(bool(selected))
        self.unlock_button.setEnabled(any(e.needs_password for e in selected))
        failed = [e for e in selected if e.reason]
        if failed:
            e = failed[0]
            self.reason.setText(f"<b>{e.name}</b>: {e.reason}<br>{e.hint}")
            self.reason.show()
        else:
            self.reason.hide()

    def _selection_changed(self, *_: object) -> None:
        ids = [e.document_id for e in self.selected_entries() if e.document_id and e.searchable]
        self.library.set_selection(ids)
        self._update_buttons()

    def _scope_changed(self, ids: list[str]) -> None:
        if ids:
            self.scope_label.setText(f"Chat is scoped to {len(ids)} selected document{'s' if len(ids) > 1 else ''}.")
        else:
            self.scope_label.setText("Chat searches the whole library.")

    def _overall(self, done: int, total: int) -> None:
        if total <= 0:
            self.overall.hide()
            return
        self.overall.setRange(0, total)
        self.overall.setValue(done)
        self.overall.setFormat(f"{done} of {total} steps")
        self.overall.show()

    def _activated(self, index) -> None:  # type: ignore[no-untyped-def]
        entry = self.proxy.data(index, ENTRY_ROLE)
        if entry is not None and entry.needs_password:
            self.prompt_password(entry.key)

    # --- adding -------------------------------------------------------------------------------

    def choose_files(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(
            self, "Add files", "", f"Documents ({' '.join('*' + e for e in formats.document_extensions())});;All files (*)"
        )
        if files:
            self.library.add_paths(files)

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add folder")
        if folder:
            self.library.add_paths([folder])

    def choose_watched_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Watch folder")
        if folder:
            self.library.add_watched_folder(folder)

    def _watched_changed(self, folders: list[str]) -> None:
        self.watched.clear()
        self.watched.addItems(folders)
        self.watched_box.setVisible(bool(folders))

    def _unwatch_selected(self) -> None:
        for item in self.watched.selectedItems():
            self.library.remove_watched_folder(item.text())

    # --- passwords ------------------------------------------------------------------------------

    def _password_required(self, entry: LibraryEntry) -> None:
        if entry.key not in self._password_queue:
            self._password_queue.append(entry.key)
        if self.password_dialog is None:
            self.prompt_password(self._password_queue[0])

    def _unlock_selected(self) -> None:
        for entry in self.selected_entries():
            if entry.needs_password:
                self.prompt_password(entry.key)
                return

    def prompt_password(self, key: str) -> None:
        """A non-blocking password prompt; the file is retried with what the user types."""
        entry = self.library.entry(key)
        if entry is None:
            return
        if self.password_dialog is not None:
            self.password_dialog.close()
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Password required")
        wrong = entry.category == "wrong_password"
        dialog.setLabelText(
            f"{'That password did not open' if wrong else 'Enter the password of'} {entry.name}:"
        )
        dialog.setTextEchoMode(QLineEdit.EchoMode.Password)
        dialog.setAccessibleName(f"Password for {entry.name}")
        dialog.setProperty("entry_key", key)

        def done(result: int) -> None:
            if key in self._password_queue:
                self._password_queue.remove(key)
            if result == QInputDialog.DialogCode.Accepted and dialog.textValue():
                self.library.retry_with_password(key, dialog.textValue())
            self.password_dialog = None
            dialog.deleteLater()
            if self._password_queue:
                self.prompt_password(self._password_queue[0])

        dialog.finished.connect(done)
        self.password_dialog = dialog
        dialog.open()
