"""Fixtures for app tests: one qasync loop on pytest-qt's QApplication."""

from __future__ import annotations

import pytest


@pytest.fixture
def qloop(qapp):
    from haiku_desk.bridge import install_event_loop

    loop = install_event_loop(qapp)
    yield loop


@pytest.fixture(autouse=True)
def _isolated_qsettings(tmp_path_factory):
    """Window state goes to a temporary INI file, never the developer's own settings."""
    from PySide6.QtCore import QSettings

    folder = tmp_path_factory.mktemp("qsettings")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    yield folder


@pytest.fixture
def notifications():
    from haiku_desk.services.notifications import Notifications

    return Notifications()


@pytest.fixture
def library(qloop, db_path, config, notifications):
    """A started LibraryService on a fresh store in a temp dir."""
    from qt_helpers import run_until

    from haiku_desk.services.library import LibraryService

    service = LibraryService(db_path, config, notifications)
    opened = []
    service.opened.connect(lambda: opened.append(True))
    service.start()
    run_until(qloop, lambda: bool(opened), timeout=120)
    yield service
    service.close()
    qloop.run_until_complete(_settle())


async def _settle():
    import asyncio

    await asyncio.sleep(0.05)


@pytest.fixture
def make_pdf():
    """Write a one-page PDF whose lines are drawn at known places; returns the path."""
    import pymupdf

    def make(path, *lines: str):
        doc = pymupdf.open()
        page = doc.new_page(width=595, height=842)
        for i, line in enumerate(lines):
            page.insert_text((72, 100 + 20 * i), line, fontname="helv", fontsize=11)
        doc.save(path)
        doc.close()
        return path

    return make
