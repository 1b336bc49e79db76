"""The keyboard shortcuts page (F1): every shortcut of the window's actions, read from the
actions themselves so the list cannot drift from what the keys do, and the keys that belong to
one widget (sending a question, ticking a document); and Help › About haiku-desk."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QUrl
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
    ("Enter / Shift+Enter, F3", "Next / previous match (in the find bar); Esc closes it"),
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


class AboutDialog(QDialog):
    """Help › About haiku-desk: versions, licence, the open library, the log folder and the
    documentation (links open with the keyboard too: Tab to one, Enter)."""

    def __init__(self, facts: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from html import escape

        self.setWindowTitle("About haiku-desk")
        self.setAccessibleName("About haiku-desk")
        self.facts = facts
        docs = "".join(f'<li><a href="{escape(url)}">{escape(title)}</a></li>' for title, url in facts.docs)
        log_url = QUrl.fromLocalFile(facts.log_folder).toString()
        self.text = QLabel(
            f"<h3>haiku-desk {escape(facts.app_version)}</h3>"
            f"<p>A research assistant over your own documents, on haiku.rag {escape(facts.library_version)}.</p>"
            f'<p>Licence: <a href="{escape(facts.licence_url)}">{escape(facts.licence)}</a></p>'
            f"<p>Library: {escape(facts.library_path)}<br>"
            f'Log folder: <a href="{escape(log_url)}">{escape(facts.log_folder)}</a></p>'
            + (f"<p>Documentation:</p><ul>{docs}</ul>" if docs else "")
            + "<p>Keyboard shortcuts: F1.</p>"
        )
        self.text.setObjectName("about_text")
        self.text.setAccessibleName("About haiku-desk")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextBrowserInteraction | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.text.setOpenExternalLinks(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        self.copy_button = buttons.addButton("Copy details", QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.clicked.connect(self.copy_details)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)
        self.setMinimumWidth(420)
        close = buttons.button(QDialogButtonBox.StandardButton.Close)
        if close is not None:
            close.setDefault(True)
            close.setFocus()

    def details(self) -> str:
        """The facts as plain text, for a bug report."""
        f = self.facts
        return (
            f"haiku-desk {f.app_version} (haiku.rag {f.library_version}), {f.licence}\n"
            f"Library: {f.library_path}\nLog folder: {f.log_folder}\n"
        )

    def copy_details(self) -> None:
        from PySide6.QtGui import QGuiApplication

        QGuiApplication.clipboard().setText(self.details())
