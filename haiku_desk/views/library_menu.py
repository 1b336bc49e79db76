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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QUrl
from PySide6.QtGui import QAction, QDesktopServices
from PySide6.QtWidgets import QFileDialog, QMenu, QMenuBar, QMessageBox, QWidget

from haiku_desk.services.library_choice import (
    is_library_folder,
    is_store,
    normal_path,
    recent_libraries,
)

if TYPE_CHECKING:
    from haiku_desk.services.entries import PendingWork


class SwitchableLibrary(Protocol):
    """What the menu needs of the library service: which library is open, what Quit would
    stop, and opening another."""

    @property
    def db_path(self) -> Path: ...

    def pending_work(self) -> PendingWork: ...

    def open_library(self, db_path: str | os.PathLike[str]) -> Any: ...  # a coroutine -> bool


def _menu(menu_bar: QMenuBar, title: str) -> QMenu | None:
    """The menu bar's menu called ``title`` (its ``&`` shortcut marker aside), if it has one."""
    for action in menu_bar.actions():
        menu = action.menu()
        if isinstance(menu, QMenu) and action.text().replace("&", "") == title:
            return menu
    return None


class LibraryMenu:
    """The library entries of the File menu and the Help › Open log folder entry."""

    def __init__(
        self, window: QWidget, menu_bar: QMenuBar, library: SwitchableLibrary, inform: Callable[[str], object], log_folder: Path
    ) -> None:
        self.window = window  # the dialogs' parent
        self.library = library
        self.inform = inform  # an info notice
        self.log_folder = log_folder
        file_menu = _menu(menu_bar, "File")
        self.new_action = QAction("New library…", window)
        self.new_action.setObjectName("new_library")
        self.new_action.triggered.connect(self.choose_new)
        self.open_action = QAction("Open library…", window)
        self.open_action.setObjectName("open_library")
        self.open_action.triggered.connect(self.choose_existing)
        self.recent_menu = QMenu("Recent libraries", window)
        self.recent_menu.setObjectName("recent_libraries")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        if file_menu is not None and file_menu.actions():  # before the File menu's own entries
            first = file_menu.actions()[0]
            file_menu.insertAction(first, self.new_action)
            file_menu.insertAction(first, self.open_action)
            file_menu.insertMenu(first, self.recent_menu)
            file_menu.insertSeparator(first)
        elif file_menu is not None:
            file_menu.addActions([self.new_action, self.open_action])
            file_menu.addMenu(self.recent_menu)
            file_menu.addSeparator()
        help_menu = _menu(menu_bar, "Help") or menu_bar.addMenu("&Help")
        self.log_action = QAction("Open log folder", window)
        self.log_action.setObjectName("open_log_folder")
        self.log_action.triggered.connect(self.open_log_folder)
        help_menu.addAction(self.log_action)
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
            if not is_store(folder):
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

        target = normal_path(db_path)
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
            self.inform(
                f"{target} is open in another haiku-desk window: it was brought to the front."
            )
            return None
        self.switch_task = asyncio.ensure_future(self.library.open_library(target))
        return self.switch_task

    def open_log_folder(self) -> None:
        folder = self.log_folder
        folder.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))
