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
OPENING_HINT = "Opening the library…"


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
        self.delete_dialog = None  # the open delete confirmation (QMessageBox), if any
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
        self._build_next_steps()

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
        layout.addWidget(self.next_steps_box)
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
        self.delete_button.clicked.connect(lambda: self.confirm_delete(self.selected_keys()))
        self.unlock_button.clicked.connect(self._unlock_selected)
        self.rescan_button.clicked.connect(lambda: library.rescan())
        self.unwatch_button.clicked.connect(self._unwatch_selected)

        library.entry_changed.connect(self._entries_changed)
        library.entry_removed.connect(self._entries_changed)
        library.overall_progress.connect(self._overall)
        library.password_required.connect(self._password_required)
        library.watched_folders_changed.connect(self._watched_changed)
        library.selection_changed.connect(self._scope_changed)
        library.opened.connect(self._entries_changed)
        library.open_failed.connect(self._entries_changed)
        library.library_changed.connect(self._entries_changed)
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
        self.empty_hint.setText(OPENING_HINT if self.library.is_opening else EMPTY_HINT)
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
        self._show_next_steps(failed[0] if failed else None)

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
            self, "Add files", "", "Documents (*.pdf *.md *.txt *.docx *.pptx *.xlsx *.html);;All files (*)"
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

    # --- failed rows: the next step their category allows ----------------------------------

    def _build_next_steps(self) -> None:
        from haiku_desk.services.failures import NextStep

        self.next_steps_box = QWidget()
        self.next_steps_box.setAccessibleName("What to do about the failed file")
        row = QHBoxLayout(self.next_steps_box)
        row.setContentsMargins(0, 0, 0, 0)
        self.next_step_buttons: dict[NextStep, QPushButton] = {}
        for step in NextStep:
            button = QPushButton(step.value)
            button.setAccessibleName(f"{step.value.rstrip('…')} the failed file")
            button.clicked.connect(lambda _=False, s=step: self.take_next_step(s))
            row.addWidget(compact_button(button))
            self.next_step_buttons[step] = button
        row.addStretch(1)
        self.next_steps_box.hide()
        self._next_step_key: str | None = None

    def _show_next_steps(self, entry: LibraryEntry | None) -> None:
        steps = entry.next_steps if entry is not None else ()
        self._next_step_key = entry.key if entry is not None else None
        for step, button in self.next_step_buttons.items():
            button.setVisible(step in steps)
        self.next_steps_box.setVisible(bool(steps))

    def take_next_step(self, step) -> None:  # type: ignore[no-untyped-def]
        """Do what the failed row's button says (for the row shown in the reason area)."""
        from haiku_desk.services.failures import NextStep

        key = self._next_step_key
        if key is None:
            return
        if step is NextStep.REINGEST:
            self.library.reingest([key])
        elif step is NextStep.PASSWORD:
            self.prompt_password(key)
        elif step is NextStep.REMOVE:
            self.library.delete([key])  # a failed row holds no document: no confirmation

    # --- deleting -----------------------------------------------------------------------------

    def confirm_delete(self, keys: list[str]) -> None:
        """Ask before deleting stored documents (rows without a document go at once). Non-
        blocking; the dialog is ``self.delete_dialog`` until answered."""
        from PySide6.QtWidgets import QMessageBox

        entries = [e for e in (self.library.entry(k) for k in keys) if e is not None]
        stored = [e for e in entries if e.document_id is not None]
        if not stored:
            self.library.delete(keys)
            return
        what = f"“{stored[0].name}”" if len(stored) == 1 else f"{len(stored)} documents"
        dialog = QMessageBox(self)
        dialog.setIcon(QMessageBox.Icon.Question)
        dialog.setWindowTitle("Delete from the library")
        dialog.setText(f"Delete {what} from the library?")
        dialog.setInformativeText(
            "Their passages leave the search and their citations stop opening. The files on "
            "disk are not touched. While the delete waits in the queue, the library's Cancel "
            "button still keeps them."
        )
        delete = dialog.addButton("Delete", QMessageBox.ButtonRole.DestructiveRole)
        keep = dialog.addButton(QMessageBox.StandardButton.Cancel)
        dialog.setDefaultButton(keep)
        dialog.setEscapeButton(keep)
        dialog.setAccessibleName("Confirm delete")

        def done(_result: int) -> None:
            if dialog.clickedButton() is delete:
                self.library.delete(keys)
            self.delete_dialog = None
            dialog.deleteLater()

        dialog.finished.connect(done)
        self.delete_dialog = dialog
        dialog.open()
