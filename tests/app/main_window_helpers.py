"""The app's main window opened as a test needs it: shown at a size (the offscreen screen is
smaller than a desktop's), with no saved pane widths unless the test saved some, and the
reader's "Open original" never starting the system's viewer."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QApplication

from haiku_desk.views.main_window import MainWindow


def open_main_window(
    qtbot: Any, services: Any, width: int, height: int, *, manage_shutdown: bool = False
) -> MainWindow:
    """``manage_shutdown``: Quit and the window's close run the app's shutdown, as the app
    sets it (the quit and evidence-table tests close it so)."""
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.quit_flow.manage_shutdown = manage_shutdown
    window.citation_panel.open_in_system_viewer = False
    window.resize(width, height)
    window.show()
    qtbot.waitExposed(window)
    QApplication.processEvents()
    return window
