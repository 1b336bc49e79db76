"""The action icons (resources/icons/actions/*.svg, drawn for haiku-desk), tinted with the
theme's text colour so they read in light and dark.

``set_icon(button_or_action, "send")`` gives a widget or an action its icon and keeps it
tinted when the scheme changes (:func:`retint` listens to ``theme.on_scheme_applied``). An icon-only
button must have an accessible name (a screen reader has no text to read):
:func:`icon_only` sets both.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QByteArray, QRectF, QSize, Qt
from PySide6.QtGui import QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QSizePolicy, QWidget

from haiku_desk.views.theme import Tokens, current_tokens, on_scheme_applied, resources_dir

if TYPE_CHECKING:
    from PySide6.QtWidgets import QAbstractButton

NAMES = (
    "add-files",
    "add-folder",
    "watch-folder",
    "rescan",
    "new-chat",
    "send",
    "stop",
    "export",
    "settings",
    "delete",
    "rename",
    "copy",
    "open-external",
)
SIZES = (16, 18, 24, 36)  # the sizes drawn (18: buttons and the toolbar; 36: the same at 2x); others scale


class _HasIcon(Protocol):
    def setIcon(self, icon: QIcon) -> None: ...  # noqa: N802 - Qt's name


_tinted: list[tuple[weakref.ref[_HasIcon], str]] = []
_cache: dict[tuple[str, str, str], QIcon] = {}


def svg_text(name: str) -> str:
    if name not in NAMES:
        raise KeyError(f"no icon named {name!r}: one of {', '.join(NAMES)}")
    folder = resources_dir()
    if folder is None:
        raise FileNotFoundError("resources/ was not found beside the app")
    return (folder / "icons" / "actions" / f"{name}.svg").read_text(encoding="utf-8")


def _pixmap(svg: str, colour: str, size: int, ratio: float) -> QPixmap:
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(QByteArray(svg.replace("currentColor", colour).encode()))
    pixmap = QPixmap(QSize(round(size * ratio), round(size * ratio)))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    return pixmap


def icon(name: str, tokens: Tokens | None = None, *, on_accent: bool = False) -> QIcon:
    """The icon ``name`` in the scheme's text colour (``on_accent``: for a primary button)."""
    from PySide6.QtGui import QGuiApplication

    t = tokens or current_tokens()
    colour = t.accent_text if on_accent else t.text
    key = (name, colour, t.text_disabled)
    cached = _cache.get(key)
    if cached is not None:
        return cached
    svg = svg_text(name)
    app = QGuiApplication.instance()
    ratio = app.devicePixelRatio() if isinstance(app, QGuiApplication) else 1.0
    result = QIcon()
    for size in SIZES:
        result.addPixmap(_pixmap(svg, colour, size, ratio), QIcon.Mode.Normal)
        result.addPixmap(_pixmap(svg, t.text_disabled, size, ratio), QIcon.Mode.Disabled)
    _cache[key] = result
    return result


def set_icon(target: _HasIcon, name: str, *, on_accent: bool = False) -> None:
    """Give a button or an action its icon, re-tinted whenever the scheme changes."""
    target.setIcon(icon(name, on_accent=on_accent))
    _tinted.append((weakref.ref(target), name + ("@accent" if on_accent else "")))


def icon_only(button: QAbstractButton, name: str, accessible_name: str, tooltip: str | None = None) -> None:
    """A button that shows only its icon: no text, the icon, a screen-reader name and a
    tooltip (the name, when none is given)."""
    button.setText("")
    set_icon(button, name)
    button.setAccessibleName(accessible_name)
    button.setToolTip(tooltip or accessible_name)
    button.setProperty("iconOnly", True)
    button.setIconSize(QSize(18, 18))
    button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
    button.setMinimumWidth(0)  # compact_button's minimum was for its text


def retint(tokens: Tokens) -> None:
    """Every icon given by :func:`set_icon` in ``tokens``' colours (on a scheme change)."""
    import shiboken6

    alive: list[tuple[weakref.ref[_HasIcon], str]] = []
    for ref, name in _tinted:
        target = ref()
        if target is None or not shiboken6.isValid(target):
            continue
        base, _, accent = name.partition("@")
        target.setIcon(icon(base, tokens, on_accent=bool(accent)))
        alive.append((ref, name))
    _tinted[:] = alive


on_scheme_applied(retint)


def name_qt_buttons(root: QWidget) -> None:
    """Screen-reader names for the icon-only buttons Qt itself adds under ``root``: a text
    box's clear button, the menu bar's and a toolbar's "more" (») buttons."""
    from PySide6.QtWidgets import QLineEdit, QMenuBar, QToolBar, QToolButton

    for button in root.findChildren(QToolButton):
        if button.accessibleName() or button.text():
            continue
        parent = button.parent()
        if isinstance(parent, QLineEdit):
            owner = parent.accessibleName() or parent.placeholderText()
            button.setAccessibleName(f"Clear {owner.lower()}" if owner else "Clear")
            button.setToolTip(button.accessibleName())
        elif isinstance(parent, QMenuBar):
            button.setAccessibleName("More menus")
        elif isinstance(parent, QToolBar):
            button.setAccessibleName("More toolbar actions")
