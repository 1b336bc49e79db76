"""Which pane has the keyboard focus, made visible (F6 / Shift+F6 move between panes).

The pane holding the focus gets the dynamic property ``focusPane`` = true (the others false;
set with :func:`haiku_desk.views.theme.set_flag`), which the app's stylesheet draws as a frame
(``*[focusPane="true"]`` in resources/style/haiku.qss). Without a stylesheet (tests, a broken
style file) a minimal frame is drawn instead: a widget of its own over the window, object name
``pane_focus_frame``, a 2 px line in the palette's highlight colour, that never takes the
mouse or the focus.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QRect, Qt
from PySide6.QtGui import QColor, QPainter, QPalette, QPen
from PySide6.QtWidgets import QApplication, QWidget

__all__ = ["FOCUS_PROPERTY", "FRAME_WIDTH", "PaneFocus"]

FOCUS_PROPERTY = "focusPane"  # the name the stylesheet selects on (views/theme.py)
FRAME_WIDTH = 2


class _Frame(QWidget):
    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("pane_focus_frame")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.hide()

    def color(self) -> QColor:
        return self.palette().color(QPalette.ColorGroup.Active, QPalette.ColorRole.Highlight)

    def paintEvent(self, event) -> None:  # noqa: N802
        painter = QPainter(self)
        pen = QPen(self.color())
        pen.setWidth(FRAME_WIDTH)
        pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
        painter.setPen(pen)
        half = FRAME_WIDTH // 2
        painter.drawRect(self.rect().adjusted(half, half, -half - (FRAME_WIDTH % 2 == 0), -half - (FRAME_WIDTH % 2 == 0)))
        painter.end()


class PaneFocus(QObject):
    """Frames the pane of ``window`` that holds the focus, from the moment F6 or Shift+F6 was
    pressed (:meth:`follow_keyboard`) until the mouse is pressed in the window: the frame is
    the keyboard's guide, so a click (which shows where the focus went by itself) removes it.

    ``panes`` returns the panes in F6 order (visible ones). While it is shown the frame follows
    the focus (Tab into another pane moves it); a focus outside the window (a menu, a dialog)
    leaves it where it was, and a focus in the window but in no pane (the toolbar) hides it.
    """

    def __init__(self, window: QWidget, panes: Callable[[], list[QWidget]]) -> None:
        super().__init__(window)
        self._window = window
        self._panes = panes
        self._current: QWidget | None = None
        self._following = False  # True from F6 until a mouse press
        self.frame = _Frame(window)
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.focusChanged.connect(self._focus_changed)
            app.installEventFilter(self)  # mouse presses in the window end the keyboard's frame

    def follow_keyboard(self) -> None:
        """F6 or Shift+F6 was pressed: frame the pane the focus goes to (and follow it)."""
        self._following = True

    def _mouse_pressed(self) -> None:
        self._following = False
        self._show(None)

    @property
    def current(self) -> QWidget | None:
        """The pane framed now, if any."""
        return self._current

    def _focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        if not self._following or new is None or new.window() is not self._window:
            return  # a dialog or a menu: the frame stays with the pane it was on
        pane = next((p for p in self._panes() if p is new or p.isAncestorOf(new)), None)
        self._show(pane)

    def _show(self, pane: QWidget | None) -> None:
        if pane is not self._current:
            if self._current is not None:
                self._current.removeEventFilter(self)
                self._set_property(self._current, False)
            self._current = pane
            if pane is not None:
                pane.installEventFilter(self)
                self._set_property(pane, True)
        self._place()

    @staticmethod
    def _set_property(pane: QWidget, value: bool) -> None:
        from haiku_desk.views.theme import set_flag

        set_flag(pane, FOCUS_PROPERTY, value)  # re-polished: the stylesheet's frame shows now

    def _place(self) -> None:
        pane = self._current
        app = QApplication.instance()
        styled = isinstance(app, QApplication) and bool(app.styleSheet())  # the stylesheet draws it
        if pane is None or not pane.isVisible() or styled:
            self.frame.hide()
            return
        top_left = pane.mapTo(self._window, pane.rect().topLeft())
        self.frame.setGeometry(QRect(top_left, pane.size()))
        self.frame.raise_()
        self.frame.show()
        self.frame.update()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if (
            event.type() == QEvent.Type.MouseButtonPress
            and self._following
            and isinstance(watched, QWidget)
            and watched.window() is self._window
        ):
            self._mouse_pressed()
            return False
        if watched is self._current and event.type() in (
            QEvent.Type.Resize, QEvent.Type.Move, QEvent.Type.Show, QEvent.Type.Hide
        ):
            self._place()
        return super().eventFilter(watched, event)
