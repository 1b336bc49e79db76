"""The library pane: documents with their state and progress, adding, watch folders, renaming,
and the chat's scope. Files can also be dropped anywhere on the main window.

Selecting rows is for managing files (cancel, re-ingest, delete, read why one failed) and never
changes what the chat searches: that is the check box in front of each document and the "All
documents" box above them (``scopeChanged``). Rows stay in the order the files arrived until
the user sorts by a column header, and the buttons keep their places (disabled, never hidden),
so nothing moves under the pointer while files are being ingested.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from PySide6.QtCore import QEvent, QRect, QSize, QSortFilterProxyModel, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionProgressBar,
    QStyleOptionViewItem,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.models.documents import (
    ENTRY_ROLE,
    FILE_NAME_ROLE,
    NAME,
    PROGRESS_ROLE,
    PROGRESS_TEXT_ROLE,
    STATE,
    DocumentsModel,
    Scope,
    file_name,
)
from haiku_desk.services.entries import OverallStatus, dialog_filters, fold
from haiku_desk.services.library import LibraryEntry, LibraryService
from haiku_desk.views.badges import badges_for, paint_badges
from haiku_desk.views.icons import set_icon
from haiku_desk.views.widgets import compact_button, confirm_delete

EMPTY_HINT = "Drop PDFs or folders anywhere on this window, or use “Add files…”."
OPENING_HINT = "Opening the library…"
ALL_DOCUMENTS = "All documents"
# The State column's width comes from the widest badges a row shows (views/badges.py:
# "embedding 100%", "text only" + "OCR"), not from what the rows show now, so a state or a
# progress that changes never resizes it; in a narrower column badges drop their figures.
NAME_SHARE = 0.62  # the Document column keeps at least this share of a narrow table
CELL_PADDING = 16
STATE_MARGINS = 4 + 2 + 2 + 2  # the badges' cell: its left and right insets, and the first badge's
# The width a library pane gives its titles when the window has room (LibraryPane.readable_width):
# about this many characters of a title, the rest ends in "…" (its tooltip holds all of it).
READABLE_TITLE_CHARS = 42
SECTIONS_SETTING = "library_pane/sections"
WATCHED_FOLDED_SETTING = "library_pane/watched_folded"  # the watched folders' list folded away
# The table's readable height: its header and this many rows (two lines each: title and file
# name). The collections and the watched folders do not take it: without the person's own
# choice they are folded (a one-line header with a count) while showing them would leave the
# table less (a 1024x640 window: both folded; 1280x800: both shown), and a list growing (a
# new collection, a folder watched) stops short of it. A handle the person drags wins.
TABLE_READABLE_ROWS = 6


def describe_scope(scope: Scope, titles: dict[str, str] | None = None) -> str:
    """How a scope reads in a header: "All documents", "1 document: Title", "3 documents",
    "No documents" (``titles`` maps document ids to titles)."""
    if scope is None:
        return ALL_DOCUMENTS
    if not scope:
        return "No documents"
    if len(scope) == 1:
        title = (titles or {}).get(scope[0])
        return f"1 document: {title}" if title else "1 document"
    return f"{len(scope)} documents"


class _ScopeAllBox(QCheckBox):
    """ "All documents": ticked for the whole library, half-ticked for some documents; a click
    ticks all, or (when all are ticked) unticks all."""

    def nextCheckState(self) -> None:  # noqa: N802
        ticked = self.checkState() == Qt.CheckState.Checked
        self.setCheckState(Qt.CheckState.Unchecked if ticked else Qt.CheckState.Checked)


class _DocumentsDelegate(QStyledItemDelegate):
    """The Document column in two lines (the title, and the file name under it in a quieter
    colour) with its scope check box; a progress bar in the Progress column while a document
    is being worked on."""

    def paint(self, painter, option, index) -> None:
        if index.column() == NAME:
            self._paint_name(painter, option, index)
            return
        percent = index.data(PROGRESS_ROLE)
        entry = index.data(ENTRY_ROLE)
        if index.column() == STATE and entry is not None:
            self._paint_state(painter, option, index, entry, percent)
            return
        if index.column() != STATE or percent is None:
            super().paint(painter, option, index)
            return
        bar = QStyleOptionProgressBar()
        bar.rect = option.rect.adjusted(2, 3, -2, -3)
        bar.minimum, bar.maximum = 0, 0 if percent < 0 else 100
        bar.progress = max(0, percent)
        bar.text = index.data(PROGRESS_TEXT_ROLE) or ""
        bar.textVisible = True
        bar.state = option.state | QStyle.StateFlag.State_Horizontal  # else Fusion fills it bottom-up
        style = option.widget.style() if option.widget else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter)

    def _paint_state(self, painter, option, index, entry: LibraryEntry, percent: int | None) -> None:
        """The state as a badge (views/badges.py), a thin progress line under it while busy."""
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        widget = option.widget
        style = widget.style() if widget else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)  # selection
        badges = badges_for(entry, index.data(PROGRESS_TEXT_ROLE) or "")
        paint_badges(painter, option.rect.adjusted(4, 0, -2, 0), badges, option.font, percent)

    def _paint_name(self, painter, option, index) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        title, opt.text = opt.text, ""
        widget = option.widget
        style = widget.style() if widget else None
        if style is None:
            return
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        text_rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, widget)
        metrics = opt.fontMetrics
        line = metrics.height()
        top = text_rect.top() + max(0, (text_rect.height() - 2 * line) // 2)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        group = QPalette.ColorGroup.Normal if opt.state & QStyle.StateFlag.State_Active else QPalette.ColorGroup.Inactive
        painter.save()
        painter.setFont(opt.font)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        painter.setPen(opt.palette.color(group, role))
        first = QRect(text_rect.left(), top, text_rect.width(), line)
        painter.drawText(first, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(title, Qt.TextElideMode.ElideRight, text_rect.width()))
        if not selected:
            painter.setPen(opt.palette.color(group, QPalette.ColorRole.PlaceholderText))
        second = QRect(text_rect.left(), top + line, text_rect.width(), line)
        file_name = index.data(FILE_NAME_ROLE) or ""
        painter.drawText(second, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(file_name, Qt.TextElideMode.ElideMiddle, text_rect.width()))
        painter.restore()


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


class _DocumentsFilter(QSortFilterProxyModel):
    """The filter box's matching: a row matches when every word typed is found in its title,
    file name, authors or year (case and accents folded), so "619" finds "report-619.pdf",
    "vaswani 2017" finds that paper and "oguz" a paper by Barlas Oğuz."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._words: list[str] = []

    def set_text(self, text: str) -> None:
        self._words = fold(text).split()
        self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: Any) -> bool:  # noqa: N802
        if not self._words:
            return True
        model = self.sourceModel()
        entry = model.data(model.index(source_row, NAME, source_parent), ENTRY_ROLE) if model else None
        if entry is None:
            return True
        haystack = fold(" ".join((entry.name, file_name(entry), entry.authors, str(entry.year or ""))))
        return all(word in haystack for word in self._words)


class LibraryPane(QWidget):
    add_files_requested = Signal()
    # What the chat searches, as the user ticked it: a tuple of document ids, None for all
    # documents (see /work/coord/scope-api.md). Never emitted for a selection or set_scope().
    scopeChanged = Signal(object)  # noqa: N815 - Qt's naming, as the chat connects it
    # A document to read: (document id, its name), on a double click, Enter or Open in the
    # row's menu; the main window shows its pages in the citation panel.
    document_opened = Signal(str, str)

    def __init__(
        self, library: LibraryService, parent: QWidget | None = None, *, collections: Any = None, evidence: Any = None
    ) -> None:
        super().__init__(parent)
        self.library = library
        # the evidence tables (ExtractionService): the delete confirmation names those losing a row
        self.evidence = evidence
        self.setAccessibleName("Library")
        self.password_dialog: QInputDialog | None = None
        self.delete_dialog: QMessageBox | None = None  # the open delete confirmation, if any
        self.rename_dialog: QInputDialog | None = None
        self._password_queue: list[str] = []

        title = QLabel("Library")
        title.setProperty("textRole", "title")
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter (Ctrl+K)")
        self.search.setToolTip("Show the documents whose title, file name, authors or year hold every word typed")
        self.search.setAccessibleName("Filter documents")
        self.search.setClearButtonEnabled(True)

        # One split button for the three ways in (a row of three would make the pane too wide
        # for a 1024 px window): a click adds files, its arrow offers a folder or a watch.
        self.add_files_button = QToolButton()
        self.add_files_button.setText("Add files…")
        self.add_files_button.setAccessibleName("Add files")
        self.add_files_button.setToolTip("Add PDFs and other documents (Ctrl+O); the arrow adds or watches a folder")
        self.add_files_button.setPopupMode(QToolButton.ToolButtonPopupMode.MenuButtonPopup)
        set_icon(self.add_files_button, "add-files")
        self.add_files_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.add_files_button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)
        add_menu = QMenu(self.add_files_button)
        self.add_files_menu_action = add_menu.addAction("Add files…")
        self.add_folder_menu_action = add_menu.addAction("Add folder…")
        self.watch_menu_action = add_menu.addAction("Watch folder…")
        self.watch_menu_action.setToolTip("Add a folder and keep the library in sync with it")
        self.add_files_button.setMenu(add_menu)

        self.model = DocumentsModel(library, self)
        self.model.scope_edited.connect(self._scope_edited)
        self.scope_all = _ScopeAllBox(ALL_DOCUMENTS)
        self.scope_all.setAccessibleName("Chat searches all documents")
        self.scope_all.setToolTip(
            "What the chat searches: tick documents below, or all of them here. "
            "Selecting rows does not change it."
        )
        self.scope_all.setCheckState(Qt.CheckState.Checked)
        self.scope_all.clicked.connect(self._scope_all_clicked)
        self.proxy = _DocumentsFilter(self)
        # Rows move only when the user sorts (a header click), never because a title resolved.
        self.proxy.setDynamicSortFilter(False)
        self.proxy.setSourceModel(self.model)
        self.search.textChanged.connect(self.proxy.set_text)
        self.search.textChanged.connect(lambda *_: self._show_hint())
        self.search.textChanged.connect(lambda *_: self._sync_scope_box())

        self.table = QTableView()
        self.table.setAccessibleName("Documents")
        self.table.setModel(self.proxy)
        self.table.setItemDelegate(_DocumentsDelegate(self.table))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setTabKeyNavigation(False)  # one Tab stop; arrows move between rows
        self.table.setHorizontalHeader(_SnugHeader(self.table))
        header = self.table.horizontalHeader()
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # arrival order until a click
        self.proxy.setSortCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.table.setSortingEnabled(True)
        vertical = self.table.verticalHeader()
        vertical.hide()
        vertical.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vertical.setDefaultSectionSize(2 * self.table.fontMetrics().height() + 8)  # title + file name
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)  # a long name ends in "…"; its tooltip holds all of it
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header.setStretchLastSection(False)
        # The Document column's width is set from the table's width less room for a vertical
        # scrollbar, shown or not (_fit_columns); State takes what is left, so a scrollbar that
        # comes with the 20th row narrows State a little and never the titles.
        header.setSectionResizeMode(NAME, QHeaderView.ResizeMode.Fixed)
        header.setSectionResizeMode(STATE, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(24)
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        # activated: a double click, or Enter on the selected row (the keyboard's way in)
        self.table.activated.connect(self._activated)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)
        self.table.installEventFilter(self)
        self.table.viewport().installEventFilter(self)
        self.rename_action = QAction("Rename…", self)
        self.rename_action.setObjectName("rename_document")
        self.rename_action.setShortcut(QKeySequence(Qt.Key.Key_F2))
        self.rename_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.rename_action.setToolTip("Rename the selected document (F2)")
        self.rename_action.triggered.connect(self.rename_current)
        self.table.addAction(self.rename_action)
        self.delete_action = QAction("Delete…", self)
        self.delete_action.setObjectName("delete_documents")
        self.delete_action.setShortcut(QKeySequence(QKeySequence.StandardKey.Delete))
        self.delete_action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)  # the table only, never the filter box
        self.delete_action.setToolTip("Delete the selected documents (Delete)")
        self.delete_action.triggered.connect(lambda: self.confirm_delete(self.selected_keys()))
        self.table.addAction(self.delete_action)
        self.extra_actions: list[QAction] = []  # more row actions, added by their own modules (Edit details…)

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
        keep = self.overall.sizePolicy()
        keep.setRetainSizeWhenHidden(True)  # the buttons below it stay put when it comes and goes
        self.overall.setSizePolicy(keep)
        self.overall.hide()

        self.watched = QListWidget()
        self.watched.setAccessibleName("Watched folders")
        self.watched.setMaximumHeight(80)
        self.watched.setMinimumHeight(self.fontMetrics().height() + 6)
        self.rescan_button = QPushButton("Rescan")
        self.rescan_button.setAccessibleName("Rescan watched folders")
        self.unwatch_button = QPushButton("Stop watching")
        self.unwatch_button.setAccessibleName("Stop watching the selected folder")
        self.watched_box = QWidget()
        wl = QVBoxLayout(self.watched_box)
        wl.setContentsMargins(0, 0, 0, 0)
        wl.setSpacing(2)
        # one header line: the title (a toggle that folds the list away, remembered) and the
        # buttons, so one watched folder costs two lines of the table, not four
        self.watched_toggle = QToolButton()
        self.watched_toggle.setText("Watched folders")
        self.watched_toggle.setAccessibleName("Show the watched folders")
        self.watched_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.watched_toggle.setArrowType(Qt.ArrowType.DownArrow)
        self.watched_toggle.setCheckable(True)
        self.watched_toggle.setAutoRaise(True)
        self.watched_toggle.toggled.connect(self._fold_watched)
        whead = QHBoxLayout()
        whead.setContentsMargins(0, 0, 0, 0)
        whead.addWidget(self.watched_toggle)
        whead.addStretch(1)
        whead.addWidget(compact_button(self.rescan_button))
        whead.addWidget(compact_button(self.unwatch_button))
        wl.addLayout(whead)
        wl.addWidget(self.watched)
        self.watched_box.hide()
        from PySide6.QtCore import QSettings

        self._set_watched_folded(bool(QSettings().value(WATCHED_FOLDED_SETTING, False, type=bool)))

        adds = QHBoxLayout()
        adds.setSpacing(4)
        adds.addWidget(self.add_files_button)
        adds.addWidget(self.search, 1)
        actions = QHBoxLayout()
        actions.setSpacing(4)
        for b in (self.cancel_button, self.reingest_button, self.delete_button, self.unlock_button):
            actions.addWidget(compact_button(b))
        # Whatever comes and goes (the empty hint, a failure's reason, watched folders) sits
        # above the buttons and takes its room from the table: the buttons never move.
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 6, 4, 6)
        layout.addWidget(title)
        layout.addLayout(adds)
        layout.addWidget(self.scope_all)
        # Collections | the table | watched folders, in a vertical splitter: the table keeps
        # its height unless the user drags a handle, either box collapses (dragged to nothing),
        # and the sizes are remembered across starts (QSettings).
        self.sections = QSplitter(Qt.Orientation.Vertical)
        self.sections.setObjectName("library_sections")
        self.sections.setAccessibleName("Library sections")
        self.sections.setChildrenCollapsible(True)
        self.collections_box = None  # the library's collections (CollectionsService given)
        if collections is not None:
            from haiku_desk.views.collections_box import CollectionsBox

            self.collections_box = CollectionsBox(collections, self.selected_document_ids)
            self.sections.addWidget(self.collections_box)
        self.table_area = QWidget()
        area = QVBoxLayout(self.table_area)
        area.setContentsMargins(0, 0, 0, 0)
        area.addWidget(self.empty_hint)
        area.addWidget(self.table, 1)
        self.sections.addWidget(self.table_area)
        self.sections.addWidget(self.watched_box)
        self._watched_window: QWidget | None = None  # whose resizes decide the default folds
        table_index = self.sections.indexOf(self.table_area)
        self.sections.setCollapsible(table_index, False)
        for i in range(self.sections.count()):
            self.sections.setStretchFactor(i, 1 if i == table_index else 0)
        self._sections_sized_by_user = False  # True once dragged (or restored from a drag)
        self._restore_sections()
        self.sections.splitterMoved.connect(lambda *_: self._save_sections())
        if collections is not None and self.collections_box is not None:  # the box fits its collections
            collections.collections_changed.connect(lambda *_: QTimer.singleShot(0, self, self._fit_sections))
            collections.collections_changed.connect(lambda *_: QTimer.singleShot(0, self, self._fold_by_default))
            self.collections_box.folded_changed.connect(lambda *_: QTimer.singleShot(0, self, self._fold_sections))
        layout.addWidget(self.sections, 1)
        layout.addWidget(self.reason)
        layout.addWidget(self.next_steps_box)
        layout.addWidget(self.overall)
        layout.addLayout(actions)

        self.add_files_button.clicked.connect(self.add_files_requested)
        self.add_files_requested.connect(self.choose_files)
        self.add_files_menu_action.triggered.connect(self.add_files_requested)
        self.add_folder_menu_action.triggered.connect(self.choose_folder)
        self.watch_menu_action.triggered.connect(self.choose_watched_folder)
        self.cancel_button.clicked.connect(lambda: library.cancel(self.selected_keys()))
        self.reingest_button.clicked.connect(lambda: library.reingest(self.selected_keys()))
        self.delete_button.clicked.connect(lambda: self.confirm_delete(self.selected_keys()))
        self.unlock_button.clicked.connect(self._unlock_selected)
        self.rescan_button.clicked.connect(lambda: library.watch.rescan())
        self.unwatch_button.clicked.connect(self._unwatch_selected)

        library.entry_changed.connect(self._entries_changed)
        library.entry_removed.connect(self._entries_changed)
        library.overall_progress.connect(self._overall)
        library.password_required.connect(self._password_required)
        library.watched_folders_changed.connect(self._watched_changed)
        library.opened.connect(self._entries_changed)
        library.open_failed.connect(self._entries_changed)
        library.library_changed.connect(self._entries_changed)
        self._watched_changed(library.watch.folders)
        self._entries_changed()

    # --- state ------------------------------------------------------------------------------

    def entries(self) -> list[LibraryEntry]:
        return [self.model.entry_at(r) for r in range(self.model.rowCount())]

    def selected_entries(self) -> list[LibraryEntry]:
        rows = self.table.selectionModel().selectedRows()
        return [self.proxy.data(index, ENTRY_ROLE) for index in rows]

    def selected_document_ids(self) -> list[str]:
        return [e.document_id for e in self.selected_entries() if e.document_id is not None]

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

    def _show_hint(self) -> None:
        """Above the table: the empty library's hint, or the filter's "No document matches"
        (a blank table said nothing)."""
        typed = self.search.text().strip()
        if self.model.rowCount() == 0:
            self.empty_hint.setText(OPENING_HINT if self.library.is_opening else EMPTY_HINT)
            self.empty_hint.setAccessibleName("Library is empty")
            self.empty_hint.setVisible(True)
        elif typed and self.proxy.rowCount() == 0:
            self.empty_hint.setText(f"No document matches “{typed}” (title, file name, authors or year).")
            self.empty_hint.setAccessibleName("No matching documents")
            self.empty_hint.setVisible(True)
        else:
            self.empty_hint.setVisible(False)

    def _entries_changed(self, *_: object) -> None:
        if self.search.text():  # a resolved title may now match the filter (rows stay unsorted)
            self.proxy.invalidateFilter()
        self._show_hint()
        self._update_buttons()
        self._sync_scope_box()

    def _update_buttons(self) -> None:
        selected = self.selected_entries()
        for button, enabled in (
            (self.cancel_button, any(e.busy for e in selected)),
            (self.reingest_button, any(not e.busy for e in selected)),
            (self.delete_button, bool(selected)),
            (self.unlock_button, any(e.needs_password for e in selected)),
        ):
            if not enabled and button.hasFocus():
                # the focus goes back to the rows: Qt would move it on to the next button, and
                # after Re-ingest that is Delete (a Space or Enter then asked to delete)
                self.table.setFocus(Qt.FocusReason.OtherFocusReason)
            button.setEnabled(enabled)
        self.rename_action.setEnabled(len(selected) == 1 and selected[0].document_id is not None)
        failed = [e for e in selected if e.reason]
        if failed:
            e = failed[0]
            self.reason.setText(f"<b>{e.name}</b>: {e.reason}<br>{e.hint}")
            self.reason.show()
        else:
            self.reason.hide()
        self._show_next_steps(failed[0] if failed else None)

    def _selection_changed(self, *_: object) -> None:
        self._update_buttons()  # selection is for managing files: the scope stays as it is

    # --- scope ------------------------------------------------------------------------------

    def scope(self) -> Scope:
        """What the chat searches: document ids, or None for all documents."""
        return self.model.scope()

    def set_scope(self, scope: Scope) -> None:
        """Show a conversation's scope in the check boxes; does not emit ``scopeChanged``."""
        self.model.set_scope(None if scope is None else tuple(scope))
        self._sync_scope_box()

    def tick(self, document_ids: Iterable[str] | None) -> None:
        """Tick exactly these documents (None: all), as the user's clicks would."""
        self.model.edit_scope(None if document_ids is None else tuple(document_ids))

    def scope_description(self) -> str:
        titles = {e.document_id: e.name for e in self.entries() if e.document_id}
        return describe_scope(self.scope(), titles)

    def _scope_all_clicked(self) -> None:
        self.model.edit_scope(None if self.scope_all.checkState() == Qt.CheckState.Checked else ())

    def _scope_edited(self, scope: Scope) -> None:
        self._sync_scope_box()
        self.scopeChanged.emit(scope)

    def _sync_scope_box(self) -> None:
        scope = self.model.scope()
        if scope is None:
            state = Qt.CheckState.Checked
        elif scope:
            state = Qt.CheckState.PartiallyChecked
        else:
            state = Qt.CheckState.Unchecked
        self.scope_all.setCheckState(state)
        self.scope_all.setEnabled(bool(self.model.stored_ids()))
        described = self.scope_description() if scope is not None and len(scope) == 1 else describe_scope(scope)
        self.scope_all.setAccessibleDescription(f"The chat searches: {described}")

    # --- columns ----------------------------------------------------------------------------

    def eventFilter(self, watched, event) -> bool:  # noqa: N802
        if watched is getattr(self, "_watched_window", None) and event.type() == QEvent.Type.Resize:
            QTimer.singleShot(0, self, self._fold_by_default)  # once the panes are laid out
        if watched is self.table and event.type() == QEvent.Type.Resize:
            self._fit_columns()
        if watched is self.table and event.type() == QEvent.Type.FocusIn:
            self._select_on_keyboard_focus(event.reason())
        if (
            watched is self.table.viewport()
            and event.type() == QEvent.Type.ContextMenu
            and event.reason() == event.Reason.Keyboard
        ):  # the Menu key (or Shift+F10): the current row's menu, by that row
            index = self.table.currentIndex()
            if index.isValid():
                self._context_menu(self.table.visualRect(index).center(), index)
            return True
        return super().eventFilter(watched, event)

    def _select_on_keyboard_focus(self, reason: Qt.FocusReason) -> None:
        """Tab (or a shortcut) into the table with nothing selected selects the current row,
        else the first: the keyboard's row is then shown, and Delete, Re-ingest and the row's
        menu act on it. Qt only made a row current, unselected and invisible (the table draws
        no focus frame per cell), and a filtered list of one row could not be selected with
        the arrows, so Delete did nothing without a mouse (tester 16:36)."""
        keyboard = (
            Qt.FocusReason.TabFocusReason,
            Qt.FocusReason.BacktabFocusReason,
            Qt.FocusReason.ShortcutFocusReason,
        )
        selection = self.table.selectionModel()
        if reason not in keyboard or selection.hasSelection() or self.proxy.rowCount() == 0:
            return
        from PySide6.QtCore import QItemSelectionModel

        current = self.table.currentIndex()
        index = current if current.isValid() else self.proxy.index(0, NAME)
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        selection.setCurrentIndex(index, flags)

    def _fit_columns(self) -> None:
        """State as wide as its longest usual text, the Document column the rest; in a narrow
        pane State gives way (its text ends in "…"), so both always fit (no scrollbar). The
        width is the table's less a vertical scrollbar's, whether one shows or not, so the
        Document column keeps its width when rows come to need one."""
        table = self.table
        scrollbar = table.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, table.verticalScrollBar())
        width = table.contentsRect().width() - scrollbar
        from PySide6.QtGui import QFontMetrics

        from haiku_desk.views.badges import PADDING_X, badge_font

        metrics = QFontMetrics(badge_font(table.font()))  # the state is drawn as a badge
        state = self.state_width()
        state_min = metrics.horizontalAdvance("embedding") + 2 * PADDING_X + STATE_MARGINS
        state = max(state_min, min(state, int(width * (1 - NAME_SHARE))))
        table.horizontalHeader().resizeSection(NAME, max(0, width - state))

    def state_width(self) -> int:
        """The State column's width for its widest badges, whole."""
        from haiku_desk.views.badges import widest_badges

        return widest_badges(self.table.font()) + STATE_MARGINS

    def readable_width(self) -> int:
        """The pane's width at which a title shows about READABLE_TITLE_CHARS characters beside
        the State column's widest badges (what the main window gives the library when it has
        the room)."""
        table = self.table
        scrollbar = table.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, table.verticalScrollBar())
        title = table.fontMetrics().averageCharWidth() * READABLE_TITLE_CHARS
        # the Document cell's check box, its paddings, and what the pane and the table frame take
        check = table.style().pixelMetric(QStyle.PixelMetric.PM_IndicatorWidth, None, table) + 2 * CELL_PADDING
        layout = self.layout()
        margins = layout.contentsMargins() if layout is not None else None
        around = (margins.left() + margins.right() if margins is not None else 0) + 2 * table.frameWidth()
        return title + check + self.state_width() + scrollbar + around

    # --- the sections' splitter ------------------------------------------------------------

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        window = self.window()
        if window is not self._watched_window:
            # The default folds follow the window's size (a short window, maximised), not the
            # banners and lines that come and go inside it: a panel unfolding by itself
            # while the person works moved the table (tester 20:10).
            if self._watched_window is not None:
                self._watched_window.removeEventFilter(self)
            self._watched_window = window
            window.installEventFilter(self)
        QTimer.singleShot(0, self, self._fold_by_default)

    def readable_table_height(self) -> int:
        """The table's header and TABLE_READABLE_ROWS rows (the height no section takes)."""
        table = self.table
        row = max(table.verticalHeader().defaultSectionSize(), 2 * table.fontMetrics().height() + 4)
        header = table.horizontalHeader().sizeHint().height()
        return header + TABLE_READABLE_ROWS * row + 2 * table.frameWidth()

    def _fold_by_default(self) -> None:
        """The collections and the watched folders the person never folded or unfolded: shown
        while the table keeps its readable height beside them all, else all folded to their
        header (a short window: one line each, with a count)."""
        boxes: list[tuple[QWidget, int, Callable[[bool], None]]] = []
        box = self.collections_box
        if box is not None and not box.chosen_fold():
            boxes.append((box, box.unfolded_extra_height(), box.set_folded))
        if not self.watched_box.isHidden() and not self._watched_chosen():
            boxes.append((self.watched_box, self._watched_extra_height(), self._set_watched_folded))
        if not boxes:
            return
        shown = [b for b in (self.collections_box, self.watched_box) if b is not None and not b.isHidden()]
        headers = sum(self._folded_height(b) for b in shown) + self.sections.handleWidth() * len(shown)
        unfolded_by_choice = sum(self._extra_height(b) for b in shown if all(b is not x for x, _, _ in boxes))
        free = self.sections.height() - headers - unfolded_by_choice - self.readable_table_height()
        show = sum(extra for _, extra, _ in boxes) <= free
        for widget, _extra, set_folded in boxes:
            if self._is_folded(widget) == show:
                set_folded(not show)

    def _is_folded(self, box: QWidget) -> bool:
        if box is self.watched_box:
            return not self.watched_toggle.isChecked()
        return bool(getattr(box, "folded", lambda: False)())

    def _extra_height(self, box: QWidget) -> int:
        if self._is_folded(box):
            return 0
        if box is self.watched_box:
            return self._watched_extra_height()
        return int(getattr(box, "unfolded_extra_height", lambda: 0)())

    def _folded_height(self, box: QWidget) -> int:
        header = self.watched_toggle if box is self.watched_box else getattr(box, "title", box)
        return max(header.sizeHint().height(), self.rescan_button.sizeHint().height())

    def _watched_chosen(self) -> bool:
        from PySide6.QtCore import QSettings

        return QSettings().contains(WATCHED_FOLDED_SETTING)

    def _watched_extra_height(self) -> int:
        layout = self.watched_box.layout()
        return self.watched.maximumHeight() + (layout.spacing() if layout is not None else 0)

    def _fold_watched(self, shown: bool) -> None:
        """The person shows or folds away the watched folders' list; remembered."""
        from PySide6.QtCore import QSettings

        QSettings().setValue(WATCHED_FOLDED_SETTING, not shown)
        self._set_watched_folded(not shown)

    def _set_watched_folded(self, folded: bool) -> None:
        shown = not folded
        self.watched_toggle.blockSignals(True)
        self.watched_toggle.setChecked(shown)
        self.watched_toggle.blockSignals(False)
        self.watched.setVisible(shown)
        # it stops watching the folder selected in the list: not there while the list is folded
        # (and the header keeps its words whole in a narrow pane: "Watche…rs (2)")
        self.unwatch_button.setVisible(shown)
        self.watched_toggle.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.watched_toggle.setAccessibleName("Hide the watched folders" if shown else "Show the watched folders")
        if hasattr(self, "sections"):
            QTimer.singleShot(0, self, self._fit_watched)

    def _fit_watched(self) -> None:
        """The watched folders' section as tall as it now needs; the table takes the rest."""
        if not self.watched_box.isHidden():
            self._fit_section(self.watched_box)

    def _fit_section(self, box: QWidget) -> None:
        """``box``'s section as tall as it now needs (folded, or its list grown or shrunk),
        the difference given to or taken from the table while the table keeps its minimum."""
        layout = box.layout()
        if layout is not None:
            layout.activate()
        sizes = self.sections.sizes()
        index, table = self.sections.indexOf(box), self.sections.indexOf(self.table_area)
        extra = sizes[index] - box.sizeHint().height()
        if extra < 0:  # it grows: never into the table's readable height
            extra = max(extra, min(0, self.readable_table_height() - sizes[table]))
        if extra:
            sizes[index] -= extra
            sizes[table] += extra
            self.sections.setSizes(sizes)

    def _restore_sections(self) -> None:
        from PySide6.QtCore import QByteArray, QSettings

        state = QSettings().value(SECTIONS_SETTING)
        if isinstance(state, QByteArray) and not state.isEmpty():
            self._sections_sized_by_user = self.sections.restoreState(state)

    def _save_sections(self) -> None:
        from PySide6.QtCore import QSettings

        self._sections_sized_by_user = True
        QSettings().setValue(SECTIONS_SETTING, self.sections.saveState())

    def _fold_sections(self) -> None:
        """The collections folded or shown: their section as tall as it now needs."""
        if self.collections_box is not None:
            self._fit_section(self.collections_box)

    def _fit_sections(self) -> None:
        """Until the user drags a handle, the collections box is as tall as its list wants
        (up to its few rows), taken from the table."""
        box = self.collections_box
        if box is None or self._sections_sized_by_user:
            return
        sizes = self.sections.sizes()
        index, table = self.sections.indexOf(box), self.sections.indexOf(self.table_area)
        missing = min(box.sizeHint().height() - sizes[index], sizes[table] - self.readable_table_height())
        if missing > 0:
            sizes[index] += missing
            sizes[table] -= missing
            self.sections.setSizes(sizes)

    # --- renaming ---------------------------------------------------------------------------

    def _context_menu(self, pos, index=None) -> None:
        index = self.table.indexAt(pos) if index is None else index
        if not index.isValid():
            return
        menu = QMenu(self.table)
        menu.setAccessibleName("Document actions")
        entry = self.proxy.data(index, ENTRY_ROLE)
        if entry is not None and entry.document_id:  # with pages or as text (Markdown, HTML, Office)
            menu.addAction("Open", lambda: self._activated(index))
            menu.addSeparator()
        menu.addAction(self.rename_action)
        menu.addActions(self.extra_actions)
        menu.addSeparator()
        for button in (self.cancel_button, self.reingest_button, self.delete_button, self.unlock_button):
            item = menu.addAction(button.text(), button.click)
            item.setEnabled(button.isEnabled())
        menu.popup(self.table.viewport().mapToGlobal(pos))
        self.context_menu = menu

    def rename_current(self) -> QInputDialog | None:
        """Ask for a new title of the one selected document (empty: back to the title found
        in the file); non-blocking."""
        selected = self.selected_entries()
        if len(selected) != 1 or selected[0].document_id is None:
            return None
        entry = selected[0]
        if self.rename_dialog is not None:
            self.rename_dialog.close()
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Rename document")
        dialog.setLabelText(f"Title of {entry.path or entry.key}\n(leave empty for the title found in the file):")
        dialog.setTextValue(entry.name)
        dialog.setAccessibleName(f"Rename {entry.name}")
        key = entry.key

        def done(result: int) -> None:
            if result == QInputDialog.DialogCode.Accepted:
                self.library.rename(key, dialog.textValue().strip() or None)
            self.rename_dialog = None
            dialog.deleteLater()

        dialog.finished.connect(done)
        self.rename_dialog = dialog
        dialog.open()
        return dialog

    def _overall(self, status: OverallStatus) -> None:
        """The phase under way and how far it is (services.entries.OverallStatus): "Reading
        files: 5 of 24 · 21 %", then "All searchable · improving search: 3 of 24 embedded"
        (shorter when the bar is narrow); hidden when idle."""
        if status.idle:
            self.overall.hide()
            return
        self.overall.setRange(0, status.total)
        self.overall.setValue(status.done)
        text = status.text()
        room = self.overall.contentsRect().width() - 12
        if room > 0 and self.overall.fontMetrics().horizontalAdvance(text) > room:
            text = status.text(short=True)
        self.overall.setFormat(text)
        self.overall.setToolTip(status.text())
        self.overall.setAccessibleDescription(status.description())
        self.overall.show()

    def _activated(self, index) -> None:
        entry = self.proxy.data(index, ENTRY_ROLE)
        if entry is None:
            return
        if entry.needs_password:
            self.prompt_password(entry.key)
        elif entry.document_id:  # a source without pages opens as its text
            self.document_opened.emit(entry.document_id, entry.name)

    # --- adding -------------------------------------------------------------------------------

    def choose_files(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Add files", "", dialog_filters())
        if files:
            self.library.add_paths(files)

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add folder")
        if folder:
            self.library.add_paths([folder])

    def choose_watched_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Watch folder")
        if folder:
            self.library.watch.add(folder)

    def _watched_changed(self, folders: list[str]) -> None:
        self.watched.clear()
        self.watched.addItems(folders)
        rows = max(1, min(3, len(folders)))  # as tall as its folders, up to three, then it scrolls
        row = self.watched.sizeHintForRow(0) if folders else self.fontMetrics().height() + 4
        self.watched.setMaximumHeight(rows * row + 2 * self.watched.frameWidth())
        self.watched_box.setVisible(bool(folders))
        self.watched_toggle.setText(f"Watched folders ({len(folders)})" if folders else "Watched folders")
        if hasattr(self, "sections"):
            QTimer.singleShot(0, self, self._fold_by_default)

    def _unwatch_selected(self) -> None:
        for item in self.watched.selectedItems():
            self.library.watch.remove(item.text())

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

    def take_next_step(self, step) -> None:
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

    def _evidence_rows_lost(self, stored: list[LibraryEntry]) -> str:
        """The sentence naming the evidence tables with a row for ``stored``: the row stays,
        marked removed from the library, with its filled values (with a trailing space); empty
        when there is none."""
        if self.evidence is None:
            return ""
        one = len(stored) == 1
        names = self.evidence.tables_with_rows([e.document_id for e in stored])
        if names is None:  # the tables are not listed yet
            return (
                "If it is a row of an evidence table, the row stays there, marked removed from "
                "the library, with its filled values. "
                if one
                else "Their rows in evidence tables stay, marked removed from the library, with "
                "their filled values. "
            )
        if not names:
            return ""
        if len(names) == 1:
            tables = f"the evidence table “{names[0]}”"
        else:
            tables = f"{len(names)} evidence tables ({', '.join(names)})"
        if one:
            return f"It is a row of {tables}: the row stays, marked removed from the library, with its filled values. "
        return f"They are rows of {tables}: the rows stay, marked removed from the library, with their filled values. "

    def confirm_delete(self, keys: list[str]) -> None:
        """Ask before deleting stored documents (rows without a document go at once). Non-
        blocking; the dialog is ``self.delete_dialog`` until answered."""
        if self.delete_dialog is not None:  # one question at a time (Delete pressed twice)
            self.delete_dialog.raise_()
            return
        entries = [e for e in (self.library.entry(k) for k in keys) if e is not None]
        stored = [e for e in entries if e.document_id is not None]
        if not stored:
            self.library.delete(keys)
            return
        what = f"“{stored[0].name}”" if len(stored) == 1 else f"{len(stored)} documents"

        def closed() -> None:
            self.delete_dialog = None

        self.delete_dialog = confirm_delete(
            self,
            title="Delete from the library",
            question=f"Delete {what} from the library?",
            consequence=(
                "Their passages leave the search and their citations stop opening. "
                + self._evidence_rows_lost(stored)
                + "The files on disk are not touched. While the delete waits in the queue, the "
                "library's Cancel button still keeps them."
            ),
            accessible_name="Confirm delete",
            on_delete=lambda: self.library.delete(keys),
            on_closed=closed,
        )
