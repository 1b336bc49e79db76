"""The one non-blocking place where errors and notices appear: a short stack of dismissible
messages, one per problem (a notice about the same thing, or saying the same, replaces the one
shown). Errors stay until dismissed or withdrawn (the problem was solved); notices fade after a
few seconds."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.services.notifications import Level, Notice, Notifications

MAX_VISIBLE = 4
LONG_WORD = 24  # characters: a longer run without spaces gets places where it may wrap
ZERO_WIDTH_SPACE = "\u200b"
INFO_TIMEOUT_MS = 6000


class NoticeWidget(QFrame):
    def __init__(self, notice: Notice, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.notice = notice
        self.members: list[Notice] = [notice]  # a group banner's notices (``set_members``)
        self.dismiss_timer: QTimer | None = None  # an info notice's (none for a lasting one)
        self.setObjectName(f"notice-{notice.level.value}")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAccessibleName(f"{notice.level.value}: {notice.message}")
        colours = {
            Level.ERROR: "rgba(220, 60, 60, 0.16)",
            Level.WARNING: "rgba(230, 160, 0, 0.18)",
            Level.INFO: "rgba(90, 140, 220, 0.14)",
        }
        app = QApplication.instance()
        if not (isinstance(app, QApplication) and app.styleSheet()):  # else the theme draws it
            self.setStyleSheet(f"#notice-{notice.level.value} {{ background: {colours[notice.level]}; border-radius: 4px; }}")
        self.label = QLabel(breakable(notice.message))
        self.label.setWordWrap(True)
        # its width comes from the window, never from a long error: it wraps, even inside a
        # long path or URL (break opportunities), so nothing is clipped or widens the window
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setToolTip(f"{notice.message}\n{notice.detail}" if notice.detail else notice.message)
        self.close_button = QToolButton()
        self.close_button.setText("✕")
        self.close_button.setAccessibleName("Dismiss")
        self.close_button.setAutoRaise(True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 4, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)

    def set_members(self, members: list[Notice]) -> None:
        """Show ``members`` (notices of one group) as this one banner: one notice as it is,
        several as one line saying how many and where to act on them."""
        self.members = members
        if len(members) == 1:
            message, detail = members[0].message, members[0].detail
        else:
            message = f"{len(members)} files could not be added: " + "; ".join(m.message for m in members) + (
                ". Each row in the library says why: select it to try again (Re-ingest) or Delete it."
            )
            detail = "\n".join(f"{m.message}: {m.detail}" if m.detail else m.message for m in members)
        self.label.setText(breakable(message))
        self.label.setToolTip(f"{message}\n{detail}" if detail and len(members) == 1 else (detail or message))
        self.setAccessibleName(f"{members[0].level.value}: {message}")


class NotificationArea(QWidget):
    def __init__(self, notifications: Notifications, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Notifications")
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(6, 0, 6, 4)
        self._layout.setSpacing(3)
        notifications.posted.connect(self.show_notice)
        notifications.withdrawn.connect(self.withdraw)
        self.hide()

    @property
    def visible_notices(self) -> list[NoticeWidget]:
        return [w for w in self.findChildren(NoticeWidget) if not w.isHidden()]

    def show_notice(self, notice: Notice) -> NoticeWidget:
        if notice.group is not None:  # one banner for the whole group (files that failed)
            for banner in self.visible_notices:
                if banner.notice.group == notice.group:
                    others = [m for m in banner.members if not _same_problem(m, notice)]
                    banner.set_members([*others, notice])
                    return banner
        for old in self.visible_notices:  # one banner per problem: the newest says it
            if _same_problem(old.notice, notice):
                self.dismiss(old)
        widget = NoticeWidget(notice, self)
        widget.close_button.clicked.connect(lambda: self.dismiss(widget))
        self._layout.addWidget(widget)
        widget.show()  # shown now: a notice posted right after it finds it (one per problem)
        if notice.level is Level.INFO and not notice.lasting:
            widget.dismiss_timer = QTimer(widget)
            widget.dismiss_timer.setSingleShot(True)
            widget.dismiss_timer.timeout.connect(lambda: self.dismiss(widget))
            widget.dismiss_timer.start(INFO_TIMEOUT_MS)
        shown = self.visible_notices
        for old in shown[: max(0, len(shown) - MAX_VISIBLE)]:
            self.dismiss(old)
        self.show()
        return widget

    def withdraw(self, key: str) -> None:
        """Dismiss the notices about ``key`` (its row was dealt with: they are stale)."""
        for widget in self.visible_notices:
            left = [m for m in widget.members if m.key != key]
            if not left:
                self.dismiss(widget)
            elif len(left) < len(widget.members):  # a group banner: the others still stand
                widget.set_members(left)

    def dismiss(self, widget: NoticeWidget) -> None:
        widget.hide()
        widget.deleteLater()
        if not [w for w in self.visible_notices if w is not widget]:
            self.hide()


def _same_problem(shown: Notice, new: Notice) -> bool:
    """Both notices are about one thing (their key), or say the same."""
    if new.key is not None or shown.key is not None:
        return shown.key == new.key
    return (shown.level, shown.message) == (new.level, new.message)


def breakable(text: str) -> str:
    """``text`` with a zero-width space after each ``/``, ``&``, ``?``, ``=`` and every
    ``LONG_WORD`` characters inside a long run without spaces (a URL, a path), so a label can
    wrap it; shorter words are left alone."""

    def split(word: str) -> str:
        if len(word) <= LONG_WORD:
            return word
        out, run = [], 0
        for char in word:
            out.append(char)
            run += 1
            if char in "/&?=" or run >= LONG_WORD:
                out.append(ZERO_WIDTH_SPACE)
                run = 0
        return "".join(out)

    return " ".join(split(word) for word in text.split(" "))
