"""The documents table the library pane shows: one row per :class:`LibraryEntry`, in the order
the documents arrived (rows never move on their own: a title that resolves, or a state that
changes, leaves every row where the pointer last saw it), with the chat-scope check box of each
document in the Document column."""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal

from haiku_desk.services.entries import DocumentState, LibraryEntry

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance

ENTRY_ROLE = Qt.ItemDataRole.UserRole + 1
PROGRESS_ROLE = Qt.ItemDataRole.UserRole + 2  # int percent, -1 for working without a measure
FILE_NAME_ROLE = Qt.ItemDataRole.UserRole + 3  # the file name (and pages), shown under the title
PROGRESS_TEXT_ROLE = Qt.ItemDataRole.UserRole + 4  # what the progress bar says: "parsing 12/619 p."

Scope = tuple[str, ...] | None  # document ids the chat searches; None: all documents

# Two columns: the Document (title, and under it the file name and pages) takes the width; the
# State cell turns into a progress bar while a document is worked on (a third column for the
# progress did not fit a laptop's library pane without a horizontal scrollbar).
COLUMNS = ("Document", "State")
NAME, STATE = range(2)
PROGRESS = STATE  # the column where progress shows

Index = QModelIndex | QPersistentModelIndex


def file_name(entry: LibraryEntry) -> str:
    if entry.path:
        return PurePath(entry.path).name
    return entry.file_name or entry.key.rsplit("/", 1)[-1]  # a Zotero row: its file, not its key


class Rows(Protocol):
    """What the table reads of the library (the library service is one): its rows, their
    changes, and when a library is opened (the rows then take their saved order)."""

    @property
    def entries(self) -> list[LibraryEntry]: ...

    @property
    def entry_changed(self) -> SignalInstance: ...  # (LibraryEntry)

    @property
    def entry_removed(self) -> SignalInstance: ...  # (key)

    @property
    def opened(self) -> SignalInstance: ...


class DocumentsModel(QAbstractTableModel):
    """Rows of the library; the Document column's check boxes are the chat's scope.

    ``scope_edited`` is emitted when the user ticks or unticks a box (or a document in the
    scope leaves the library), with the new :data:`Scope`; :meth:`set_scope` never emits.
    """

    scope_edited = Signal(object)  # Scope

    def __init__(self, library: Rows, parent: Any = None) -> None:
        super().__init__(parent)
        self._keys: list[str] = []
        self._entries: dict[str, LibraryEntry] = {}
        self._scope: frozenset[str] | None = None
        for entry in library.entries:
            self._keys.append(entry.key)
            self._entries[entry.key] = entry
        library.entry_changed.connect(self._on_changed)
        library.entry_removed.connect(self._on_removed)
        # Opened: stored, failed and queued rows were listed as each was read; now they take
        # the order they arrived in (kept across relaunches by the service).
        library.opened.connect(lambda: self._follow_order([e.key for e in library.entries]))

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._keys)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def entry_at(self, row: int) -> LibraryEntry:
        return self._entries[self._keys[row]]

    def row_of(self, key: str) -> int:
        return self._keys.index(key)

    # --- scope ------------------------------------------------------------------------------

    def scope(self) -> Scope:
        return None if self._scope is None else tuple(sorted(self._scope))

    def set_scope(self, scope: Scope) -> None:
        """Show ``scope`` in the check boxes (a conversation's own scope); never emits."""
        new = None if scope is None else frozenset(scope)
        if new != self._scope:
            self._scope = new
            self._scope_boxes_changed()

    def in_scope(self, entry: LibraryEntry) -> bool:
        if self._scope is None:
            return True
        return entry.document_id is not None and entry.document_id in self._scope

    def stored_ids(self) -> set[str]:
        return {e.document_id for e in self._entries.values() if e.document_id is not None}

    def edit_scope(self, scope: Scope) -> None:
        """The user's change of scope: every stored document ticked is "all documents"."""
        new = None if scope is None else frozenset(scope)
        stored = self.stored_ids()
        if new is not None and stored and stored <= new:
            new = None
        if new != self._scope:
            self._scope = new
            self._scope_boxes_changed()
            self.scope_edited.emit(self.scope())

    def _toggle(self, entry: LibraryEntry, ticked: bool) -> None:
        assert entry.document_id is not None
        current = self.stored_ids() if self._scope is None else set(self._scope)
        if ticked:
            current.add(entry.document_id)
        else:
            current.discard(entry.document_id)
        self.edit_scope(tuple(current))

    def _scope_boxes_changed(self) -> None:
        if self._keys:
            last = len(self._keys) - 1
            self.dataChanged.emit(self.index(0, NAME), self.index(last, NAME), [Qt.ItemDataRole.CheckStateRole])

    def flags(self, index: Index) -> Qt.ItemFlag:
        flags = super().flags(index)
        if index.isValid() and index.column() == NAME and self.entry_at(index.row()).document_id is not None:
            flags |= Qt.ItemFlag.ItemIsUserCheckable  # a file on its way in has no id to scope to yet
        return flags

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        if not index.isValid() or index.column() != NAME or role != Qt.ItemDataRole.CheckStateRole:
            return False
        entry = self.entry_at(index.row())
        if entry.document_id is None:
            return False
        self._toggle(entry, Qt.CheckState(value) == Qt.CheckState.Checked)
        return True

    # --- rows ------------------------------------------------------------------------------

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        entry = self.entry_at(index.row())
        column = index.column()
        if role == ENTRY_ROLE:
            return entry
        if role == FILE_NAME_ROLE:
            # the pages once known (kept while the vectors are computed, a re-ingest queued…)
            pages = f" · {entry.page_count} p." if entry.page_count and entry.state is not DocumentState.PARSING else ""
            return file_name(entry) + pages
        if role == PROGRESS_TEXT_ROLE:
            return _progress_text(entry)
        if role == Qt.ItemDataRole.CheckStateRole and column == NAME:
            return Qt.CheckState.Checked if self.in_scope(entry) else Qt.CheckState.Unchecked
        if role == PROGRESS_ROLE:
            # A queued file is waiting, not working: it reads "queued", with no busy animation.
            if not entry.busy or entry.state is DocumentState.QUEUED:
                return None
            fraction = entry.fraction
            return -1 if fraction is None else int(fraction * 100)
        if role == Qt.ItemDataRole.DisplayRole:
            if column == NAME:
                return entry.name
            if column == STATE:
                return entry.state_label
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = [entry.name, entry.path or entry.key]  # the whole name: the column elides it
            if entry.reason:
                lines.append(entry.reason)
            if entry.hint:
                lines.append(entry.hint)
            if entry.watched_folder:
                lines.append(f"in the watched folder {entry.watched_folder}")
            return "\n".join(lines)
        if role == Qt.ItemDataRole.AccessibleDescriptionRole and column == NAME:
            scoped = "in the chat's scope" if self.in_scope(entry) else "not in the chat's scope"
            return (
                f"{entry.name} ({file_name(entry)}): {entry.state_label}, {scoped}"
                + (f". {entry.reason}" if entry.reason else "")
            )
        if role == Qt.ItemDataRole.ForegroundRole and column == STATE and entry.state is DocumentState.FAILED:
            from PySide6.QtGui import QColor

            return QColor(200, 40, 40)
        return None

    def _on_changed(self, entry: LibraryEntry) -> None:
        if entry.key in self._entries:
            self._entries[entry.key] = entry
            row = self._keys.index(entry.key)
            self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))
            return
        row = len(self._keys)
        self.beginInsertRows(QModelIndex(), row, row)
        self._keys.append(entry.key)
        self._entries[entry.key] = entry
        self.endInsertRows()

    def _follow_order(self, keys: list[str]) -> None:
        ordered = [k for k in keys if k in self._entries]
        listed = set(ordered)
        ordered += [k for k in self._keys if k not in listed]
        if ordered == self._keys:
            return
        self.layoutAboutToBeChanged.emit()
        old_keys, self._keys = self._keys, ordered
        new_rows = {key: row for row, key in enumerate(self._keys)}
        before = self.persistentIndexList()
        after = [self.index(new_rows[old_keys[i.row()]], i.column()) for i in before]
        self.changePersistentIndexList(before, after)
        self.layoutChanged.emit()

    def _on_removed(self, key: str) -> None:
        if key not in self._entries:
            return
        row = self._keys.index(key)
        self.beginRemoveRows(QModelIndex(), row, row)
        del self._keys[row]
        entry = self._entries.pop(key)
        self.endRemoveRows()
        if self._scope is not None and entry.document_id in self._scope:
            self._scope = self._scope - {entry.document_id}
            self.scope_edited.emit(self.scope())


def _progress_text(entry: LibraryEntry) -> str:
    """What the State cell's progress bar says: "parsing 12/619 p.", "embedding 42%", "chunking"."""
    if not entry.busy:
        return entry.state_label
    if entry.total:
        if entry.stage == "embedding":
            return f"embedding {min(100, 100 * entry.done // entry.total)}%"
        unit = " p." if entry.stage == "parsing" else ""
        return f"{entry.stage} {entry.done}/{entry.total}{unit}"
    return entry.stage or entry.state_label
