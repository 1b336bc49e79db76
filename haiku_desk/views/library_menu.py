"""File › New library…, Open library…, Recent libraries, and Help › Open log folder.

Switching libraries shuts the current one down as Quit does (its unfinished work is kept in
it), then opens the other: ``LibraryService.open_library``, which emits
``library_changed(db_path)`` for the services that follow the library (the chat). The recent
list lives in QSettings; the app starts on the last library used unless ``--db`` or
``HAIKU_RAG_DB`` names one.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, QUrl
from PySide6.QtGui import QAction, QDesktopServices
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox

if TYPE_CHECKING:
    from haiku.rag.config import AppConfig
    from haiku_desk.views.main_window import MainWindow

RECENT_KEY = "libraries/recent"
MAX_RECENT = 8
STORE_MARKER = "settings.lance"  # every haiku.rag store has this table


def recent_libraries() -> list[str]:
    value = QSettings().value(RECENT_KEY, [])
    items = [value] if isinstance(value, str) else list(value or [])
    return [str(p) for p in items if p]


def remember_library(db_path: str | os.PathLike[str]) -> None:
    path = str(db_path)
    items = [path] + [p for p in recent_libraries() if p != path]
    settings = QSettings()
    settings.setValue(RECENT_KEY, items[:MAX_RECENT])
    settings.sync()


def initial_library(db_arg: str | None, config: AppConfig) -> Path | str:
    """``--db``, else ``$HAIKU_RAG_DB``, else the last library used that still exists, else
    the default library in the data dir."""
    from haiku.rag.config import resolve_db_path

    if db_arg or os.environ.get("HAIKU_RAG_DB") or config.lancedb.uri:
        return _normal(resolve_db_path(db_arg, config))
    for path in recent_libraries():
        if "://" in path or (Path(path) / STORE_MARKER).is_dir():
            return _normal(path)
    return _normal(resolve_db_path(None, config))


def _normal(path: str | os.PathLike[str]) -> Path | str:
    text = str(path)
    return text if "://" in text else Path(text).expanduser().resolve()


def is_library_folder(path: Path) -> bool:
    """A haiku.rag store, or an empty folder (which becomes one)."""
    return (path / STORE_MARKER).is_dir() or (path.is_dir() and not any(path.iterdir()))


class LibraryMenu:
    """The library entries of the File menu and the Help › Open log folder entry."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.library = window.services.library
        file_menu = next(
            (a.menu() for a in window.menuBar().actions() if a.menu() and a.text().replace("&", "") == "File"),
            None,
        )
        self.new_action = QAction("New library…", window)
        self.new_action.setObjectName("new_library")
        self.new_action.triggered.connect(self.choose_new)
        self.open_action = QAction("Open library…", window)
        self.open_action.setObjectName("open_library")
        self.open_action.triggered.connect(self.choose_existing)
        self.recent_menu = QMenu("Recent libraries", window)
        self.recent_menu.setObjectName("recent_libraries")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        if file_menu is not None:
            first = file_menu.actions()[0] if file_menu.actions() else None
            file_menu.insertAction(first, self.new_action)
            file_menu.insertAction(first, self.open_action)
            file_menu.insertMenu(first, self.recent_menu)
            file_menu.insertSeparator(first)
        help_menu = next(
            (a.menu() for a in window.menuBar().actions() if a.menu() and a.text().replace("&", "") == "Help"),
            None,
        ) or window.menuBar().addMenu("&Help")
        self.log_action = QAction("Open log folder", window)
        self.log_action.setObjectName("open_log_folder")
        self.log_action.triggered.connect(self.open_log_folder)
        help_menu.addAction(self.log_action)
        self.library.library_changed.connect(lambda path: remember_library(path))
        self.switch_task: asyncio.Future[bool] | None = None

    # --- choosing ------------------------------------------------------------------------------

    def choose_new(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "New library", str(Path.home() / "Library.lancedb"))
        if path:
            folder = Path(path)
            if folder.exists() and not is_library_folder(folder):
                self._refuse(f"{folder} already exists and is not a library; choose a new name.")
                return
            self.switch(folder)

    def choose_existing(self) -> None:
        path = QFileDialog.getExistingDirectory(self.window, "Open library")
        if path:
            folder = Path(path)
            if not (folder / STORE_MARKER).is_dir():
                self._refuse(f"{folder} is not a haiku-desk library (it holds no haiku.rag store).")
                return
            self.switch(folder)

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        current = str(self.library.db_path)
        for path in recent_libraries():
            action = self.recent_menu.addAction(path)
            action.setEnabled(path != current)
            action.triggered.connect(lambda _=False, p=path: self.switch(p))
        if self.recent_menu.isEmpty():
            self.recent_menu.addAction("(none yet)").setEnabled(False)

    def _refuse(self, message: str) -> None:
        QMessageBox.warning(self.window, "haiku-desk", message)

    # --- switching -------------------------------------------------------------------------------

    def switch(self, db_path: str | os.PathLike[str]) -> asyncio.Future[bool] | None:
        """Open another library in this window (asks first when work is pending)."""
        from haiku_desk.single_instance import hand_over

        target = _normal(db_path)
        if str(target) == str(self.library.db_path):
            return None
        pending = self.library.pending_work()
        if pending:
            from haiku_desk.views.quit_dialog import describe_pending

            answer = QMessageBox.question(
                self.window,
                "Open another library",
                f"{describe_pending(pending)}\n\nStop them and open the other library? What was "
                "not done is kept and resumes when you open this library again.",
            )
            if answer != QMessageBox.StandardButton.Yes:
                return None
        handover = hand_over(target, [])
        if handover.handed_over:
            self.window.services.notifications.info(
                f"{target} is open in another haiku-desk window: it was brought to the front."
            )
            return None
        self.switch_task = asyncio.ensure_future(self.library.open_library(target))
        return self.switch_task

    def open_log_folder(self) -> None:
        from haiku.rag.logs import log_folder

        folder = log_folder(self.window.services.config.storage.data_dir)
        folder.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))
