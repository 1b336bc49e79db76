"""The documents table the library pane shows: one row per :class:`LibraryEntry`."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from haiku_desk.services.library import DocumentState, LibraryEntry, LibraryService

ENTRY_ROLE = Qt.ItemDataRole.UserRole + 1
PROGRESS_ROLE = Qt.ItemDataRole.UserRole + 2  # int percent, -1 for working without a measure

COLUMNS = ("Document", "State", "Progress")
NAME, STATE, PROGRESS = range(3)

Index = QModelIndex | QPersistentModelIndex


class DocumentsModel(QAbstractTableModel):
    def __init__(self, library: LibraryService, parent: Any = None) -> None:
        super().__init__(parent)
        self._keys: list[str] = []
        self._entries: dict[str, LibraryEntry] = {}
        for entry in library.entries:
            self._keys.append(entry.key)
            self._entries[entry.key] = entry
        library.entry_changed.connect(self._on_changed)
        library.entry_removed.connect(self._on_removed)

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

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        entry = self.entry_at(index.row())
        column = index.column()
        if role == ENTRY_ROLE:
            return entry
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
            if column == PROGRESS:
                return _progress_text(entry)
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
            return f"{entry.name}: {entry.state_label}" + (f". {entry.reason}" if entry.reason else "")
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

    def _on_removed(self, key: str) -> None:
        if key not in self._entries:
            return
        row = self._keys.index(key)
        self.beginRemoveRows(QModelIndex(), row, row)
        del self._keys[row]
        del self._entries[key]
        self.endRemoveRows()


def _progress_text(entry: LibraryEntry) -> str:
    if not entry.busy:
        return f"{entry.page_count} p." if entry.page_count else ""
    unit = "chunks" if entry.stage == "embedding" else "pages"
    if entry.total:
        return f"{entry.stage} {entry.done}/{entry.total} {unit}"
    return entry.stage or entry.state_label
