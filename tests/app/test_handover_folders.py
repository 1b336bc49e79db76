"""Folders another launch hands over are added only after the person says yes (issue 32: the
running app ingested any folder a local process named)."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from qt_helpers import run_until

from app.test_quit import app_window as app_window  # noqa: F401 (the fixture: a real window and services)
from haiku_desk.app import _confirm_folders
from haiku_desk.services.library import uri_for


def answer_the_question(button: QMessageBox.StandardButton, seen: list[str]) -> None:
    box = QApplication.activeModalWidget()
    assert isinstance(box, QMessageBox)
    seen.append(box.text())
    box.button(button).click()


def test_a_handed_over_folder_waits_for_yes(app_window, qloop, tmp_path, make_pdf):  # noqa: F811
    folder = tmp_path / "private"
    folder.mkdir()
    paper = make_pdf(folder / "salaries.pdf", "Salaries 2026.")
    library = app_window.services.library
    seen: list[str] = []

    QTimer.singleShot(0, lambda: answer_the_question(QMessageBox.StandardButton.No, seen))
    _confirm_folders(app_window, app_window.services, [str(folder)])
    assert seen and str(folder) in seen[0]
    assert folder_walks(qloop) == [] and library.entry(uri_for(paper)) is None  # "No": nothing

    QTimer.singleShot(0, lambda: answer_the_question(QMessageBox.StandardButton.Yes, seen))
    _confirm_folders(app_window, app_window.services, [str(folder)])
    assert len(folder_walks(qloop)) == 1  # "Yes": the folder is being walked ...
    run_until(qloop, lambda: library.entry(uri_for(paper)) is not None, 60)  # ... and its file queued


def folder_walks(loop) -> list[asyncio.Task]:
    """The library's folder walks started and not finished (``add_paths`` starts one per
    folder at once, so "none" right after the answer means none was asked for)."""
    return [t for t in asyncio.all_tasks(loop) if t.get_coro().__qualname__.endswith("._add_folder") and not t.done()]
