"""Light and dark follow the system colour scheme (and switch when it changes)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication


def is_dark(app: QGuiApplication) -> bool:
    return app.styleHints().colorScheme() == Qt.ColorScheme.Dark


def dark_palette() -> QPalette:
    p = QPalette()
    base, window, text = QColor(30, 31, 34), QColor(43, 45, 48), QColor(223, 225, 229)
    disabled = QColor(128, 128, 128)
    roles = {
        QPalette.ColorRole.Window: window,
        QPalette.ColorRole.WindowText: text,
        QPalette.ColorRole.Base: base,
        QPalette.ColorRole.AlternateBase: window,
        QPalette.ColorRole.ToolTipBase: window,
        QPalette.ColorRole.ToolTipText: text,
        QPalette.ColorRole.PlaceholderText: disabled,
        QPalette.ColorRole.Text: text,
        QPalette.ColorRole.Button: window,
        QPalette.ColorRole.ButtonText: text,
        QPalette.ColorRole.BrightText: QColor(255, 90, 90),
        QPalette.ColorRole.Link: QColor(110, 160, 255),
        QPalette.ColorRole.Highlight: QColor(53, 116, 240),
        QPalette.ColorRole.HighlightedText: QColor(255, 255, 255),
    }
    for role, colour in roles.items():
        p.setColor(role, colour)
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        p.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return p


def apply_system_theme(app: QApplication) -> None:
    """Fusion style with a palette matching the system's light or dark scheme, kept in sync."""
    app.setStyle("Fusion")

    def apply(*_: object) -> None:
        app.setPalette(dark_palette() if is_dark(app) else app.style().standardPalette())

    apply()
    if not app.property("haiku_theme_connected"):
        app.styleHints().colorSchemeChanged.connect(apply)
        app.setProperty("haiku_theme_connected", True)
