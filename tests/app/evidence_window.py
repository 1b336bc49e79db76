"""The app's window as it starts over a library of evidence tables, and its Quit: shared by
the evidence-table tests and the delete confirmation's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from extraction.papers import library_config
from qt_helpers import run_until

from app.main_window_helpers import open_main_window
from haiku_desk.services import create_services
from haiku_desk.views.main_window import DEFAULT_SIZE, MainWindow

SLOW = 180  # opening a library and listing its tables on 2 shared cores


def open_window(qtbot, qapp, qloop, db_path: Path, root: Path, model: Any | None = None) -> MainWindow:
    """The app as it starts: services over the library, the library opened, the window shown,
    the evidence tables listed (and the open one's fill resumed, if one was running)."""
    qapp.setQuitOnLastWindowClosed(False)  # as the app does: the shutdown quits, not the close
    services = create_services(db_path, library_config(root))
    if model is not None:
        services.models.use_model_instance(model.model, supports_tools=False)
    opened: list[bool] = []
    services.library.opened.connect(lambda: opened.append(True))
    services.library.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    assert services.evidence is not None and services.collections is not None
    qloop.run_until_complete(services.evidence.wait_started())
    run_until(qloop, lambda: services.collections.listed, SLOW)  # the New table dialog offers them
    window = open_main_window(qtbot, services, *DEFAULT_SIZE, manage_shutdown=True)
    window.show_evidence_table()
    return window


def quit_window(qloop, window: MainWindow) -> None:
    """Quit as the user does (the window's close: Quit), and wait for the shutdown."""
    window.close()
    qloop.run_until_complete(window.quit_flow.wait())
