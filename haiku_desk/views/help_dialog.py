"""The keyboard shortcuts page (F1): every shortcut of the window's actions, read from the
actions themselves so the list cannot drift from what the keys do, and the keys that belong to
one widget (sending a question, ticking a document)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

# Keys handled inside one widget, not by a window action.
WIDGET_KEYS = (
    ("Ctrl+Enter", "Send the question (in the question box)"),
    ("Esc", "Stop the answer being written"),
    ("Tab / Shift+Tab", "Next / previous control; the documents table is one stop"),
    ("↑ ↓", "Move between documents in the table"),
    ("Space", "Tick or untick the current document for the chat's scope"),
    ("Enter", "Read the current document in the citation panel (or double-click it)"),
    ("F2", "Rename the selected document (in the library)"),
    ("Ctrl+F", "Find in the document (in the citation panel); Enter / Shift+Enter: next / previous"),
    ("+ / − or Ctrl+wheel", "Zoom the cited page (in the citation panel); Ctrl+0 fits the width"),
)


def _native(sequence: QKeySequence) -> str:
    return sequence.toString(QKeySequence.SequenceFormat.NativeText)


def action_shortcuts(actions: list[QAction]) -> list[tuple[str, str]]:
    """(keys, what they do) for every action with a shortcut, in the order given."""
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for action in actions:
        keys = [_native(k) for k in action.shortcuts() if not k.isEmpty()]
        if not keys or action.text() in seen:
            continue
        seen.add(action.text())
        rows.append((" or ".join(dict.fromkeys(keys)), action.text().replace("&", "").rstrip("…")))
    return rows


class ShortcutsDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setAccessibleName("Keyboard shortcuts")
        actions = parent.actions() if parent is not None else []
        rows = action_shortcuts(actions) + list(WIDGET_KEYS)

        self.table = QTableWidget(len(rows), 2, self)
        self.table.setAccessibleName("Shortcuts")
        self.table.setHorizontalHeaderLabels(["Keys", "Does"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setTabKeyNavigation(False)
        for row, (keys, does) in enumerate(rows):
            self.table.setItem(row, 0, QTableWidgetItem(keys))
            self.table.setItem(row, 1, QTableWidgetItem(does))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)

        note = QLabel(
            "What the chat searches is chosen with the check boxes in the library "
            "(or “All documents”); selecting rows only picks the files the buttons act on."
        )
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(note)
        layout.addWidget(buttons)
        self.resize(520, min(620, 90 + 30 * len(rows)))
        self.setWindowModality(Qt.WindowModality.WindowModal)

    def rows(self) -> list[tuple[str, str]]:
        def text(row: int, column: int) -> str:
            item = self.table.item(row, column)
            return item.text() if item is not None else ""

        return [(text(r, 0), text(r, 1)) for r in range(self.table.rowCount())]
