"""Small widgets shared by the panes: a one-line eliding label, compact push buttons and the
confirmation asked before anything is deleted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QMessageBox,
    QPushButton,
    QSizePolicy,
    QStyle,
    QWidget,
)


def compact_button(button: QPushButton) -> QPushButton:
    """A push button that may shrink to its text: the style's 80 px minimum would make a row of
    buttons wider than a narrow pane and push its last button out of sight."""
    padding = 2 * button.style().pixelMetric(QStyle.PixelMetric.PM_ButtonMargin) + 4
    width = button.fontMetrics().horizontalAdvance(button.text()) + padding
    app = QApplication.instance()
    if isinstance(app, QApplication) and app.styleSheet():
        # the theme's stylesheet sets the padding and border (and drops the 80 px minimum)
        width = max(width, button.sizeHint().width())
    button.setMinimumWidth(width)
    button.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
    return button


def confirm_delete(
    parent: QWidget,
    *,
    title: str,
    question: str,
    consequence: str,
    accessible_name: str,
    on_delete: Callable[[], None],
    on_closed: Callable[[], None],
) -> QMessageBox:
    """Open (non-blocking) the one kind of delete confirmation: "Delete" beside "Cancel", Cancel
    the default and Escape, so a stray Enter never deletes. ``on_delete`` runs only when Delete
    was clicked; ``on_closed`` runs however the dialog closed."""
    dialog = QMessageBox(parent)
    dialog.setIcon(QMessageBox.Icon.Question)
    dialog.setWindowTitle(title)
    dialog.setText(question)
    dialog.setInformativeText(consequence)
    delete = dialog.addButton("Delete", QMessageBox.ButtonRole.DestructiveRole)
    keep = dialog.addButton(QMessageBox.StandardButton.Cancel)
    dialog.setDefaultButton(keep)
    dialog.setEscapeButton(keep)
    dialog.setAccessibleName(accessible_name)

    def done(_result: int) -> None:
        if dialog.clickedButton() is delete:
            on_delete()
        on_closed()
        dialog.deleteLater()

    dialog.finished.connect(done)
    dialog.open()
    centre_on_window(dialog, parent)
    return dialog


def centre_on_window(dialog: QWidget, parent: QWidget) -> None:
    """Put an open dialog at the centre of ``parent``'s window, at its final size: the same
    place every time, whatever its text (left to itself, a message box is placed before its
    text is laid out, so a longer question lands elsewhere)."""
    dialog.adjustSize()
    window = parent.window()
    frame = dialog.frameGeometry()
    frame.moveCenter(window.frameGeometry().center())
    dialog.move(frame.topLeft())


class ElidedLabel(QLabel):
    """One line, elided to the width the layout gives it, the whole text in its tooltip (long
    document titles would otherwise wrap into walls or widen their pane)."""

    def __init__(
        self,
        text: str = "",
        parent: QWidget | None = None,
        mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight,
    ) -> None:
        super().__init__(parent)
        self.mode = mode
        self.full_text = ""
        self.suffix = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(False)
        # Its width comes from the layout, never from the text.
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.set_full_text(text)

    def set_full_text(self, text: str, suffix: str = "") -> None:
        """Show ``text`` elided to fit, followed by ``suffix`` (never elided, e.g. pages)."""
        self.full_text = " ".join(text.split())
        self.suffix = suffix
        whole = self.full_text + suffix
        self.setToolTip(whole if whole else "")
        self._elide()

    def is_elided(self) -> bool:
        return self.text() != self.full_text + self.suffix

    def _elide(self) -> None:
        metrics = self.fontMetrics()
        room = self.contentsRect().width() - metrics.horizontalAdvance(self.suffix)
        text = metrics.elidedText(self.full_text, self.mode, max(0, room)) if room > 0 else ""
        if not text and self.full_text:
            text = "…"
        super().setText(text + self.suffix)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        hint = super().minimumSizeHint()
        return QSize(0, hint.height())

    def sizeHint(self) -> QSize:  # noqa: N802
        hint = super().sizeHint()
        return QSize(min(hint.width(), 200), hint.height())

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()
