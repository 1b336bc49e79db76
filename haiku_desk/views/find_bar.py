"""Find-in-document's bar under the reader's header: the text, how many matches, previous and
next (Enter / Shift+Enter, F3 / Shift+F3), Escape closes it."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

SEARCH_DELAY_MS = 250  # typing pauses this long before a book's pages are searched


class FindBar(QWidget):
    search = Signal(str)  # the text to find (empty: clear the matches)
    step = Signal(int)  # +1 next match, -1 previous
    closed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Find in document")
        self.edit = QLineEdit()
        self.edit.setPlaceholderText("Find in document")
        self.edit.setAccessibleName("Find in document")
        self.edit.setClearButtonEnabled(True)
        self.count = QLabel()
        self.count.setAccessibleName("Matches")
        self.previous_button = self._button("▲", "Previous match", "Previous match (Shift+Enter)")
        self.next_button = self._button("▼", "Next match", "Next match (Enter)")
        self.close_button = self._button("✕", "Close find", "Close find (Esc)")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.edit, 1)
        layout.addWidget(self.count)
        for button in (self.previous_button, self.next_button, self.close_button):
            layout.addWidget(button)
        self._searched: str | None = None
        self._delay = QTimer(self)
        self._delay.setSingleShot(True)
        self._delay.setInterval(SEARCH_DELAY_MS)
        self._delay.timeout.connect(self.search_now)
        self.edit.textChanged.connect(lambda _text: self._delay.start())
        self.previous_button.clicked.connect(lambda: self._go(-1))
        self.next_button.clicked.connect(lambda: self._go(+1))
        self.close_button.clicked.connect(self.close_bar)
        self.edit.installEventFilter(self)

    @staticmethod
    def _button(text: str, name: str, tip: str) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setAccessibleName(name)
        button.setToolTip(tip)
        return button

    def open_bar(self) -> None:
        self.show()
        self.edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.edit.selectAll()

    def close_bar(self) -> None:
        self._delay.stop()
        self.hide()
        self._searched = None
        self.count.setText("")
        self.closed.emit()

    def search_now(self) -> None:
        """Search for the text now (the delay after typing skipped)."""
        self._delay.stop()
        text = self.edit.text()
        if text != self._searched:
            self._searched = text
            self.count.setText("…" if text else "")
            self.search.emit(text)

    def show_count(self, current: int, total: int) -> None:
        """``current`` is 0-based; no matches says so."""
        if not self.edit.text():
            self.count.setText("")
        elif total == 0:
            self.count.setText("No matches")
        else:
            self.count.setText(f"{current + 1} of {total}")
        self.count.setAccessibleDescription(self.count.text())

    def _go(self, step: int) -> None:
        if self._delay.isActive() or self.edit.text() != self._searched:
            self.search_now()  # Enter right after typing: the first match, not the second
            return
        self.step.emit(step)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.edit and isinstance(event, QKeyEvent) and event.type() == QKeyEvent.Type.KeyPress:
            if event.key() == Qt.Key.Key_Escape:
                self.close_bar()
                return True
            if event.key() in (Qt.Key.Key_F3, Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self._go(-1 if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else +1)
                return True
        return super().eventFilter(watched, event)
