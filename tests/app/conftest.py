"""Fixtures for app tests: one qasync loop on pytest-qt's QApplication.

The app runs its loop forever, so asyncio always sees it running. Tests run it in slices
(``run_until``, ``run_until_complete``), and Qt events also get processed between slices
(``qtbot`` waits, the final ``processEvents`` qasync does after each slice). A task step taken
then would find no running loop, and anyio/sniffio inside Pydantic AI fails with "Not
currently running on any asynchronous event loop" — a test-only race. So during each app test
the loop stays registered as asyncio's running loop between slices, as it is in the app; it is
unregistered after the test (other tests use their own loops) and closed at the end of the
session, which also stops its executor threads before Qt is torn down.

Garbage collection runs on the GUI thread during app tests, as in the app (see
``haiku_desk.bridge.GuiThreadCollector``), and goes back to Python after the last of them, so
the library's tests that follow collect as usual.
"""

from __future__ import annotations

import asyncio
import inspect

import pytest


def _sliced_loop(qapp):
    from haiku_desk.bridge import app_event_loop_class

    class SlicedQEventLoop(app_event_loop_class()):
        keep_registered = False

        def _after_run_forever(self) -> None:
            super()._after_run_forever()
            if self.keep_registered:
                asyncio.events._set_running_loop(self)

    return SlicedQEventLoop(qapp)


@pytest.fixture(scope="session", autouse=True)
def _session_qloop(qapp):
    from haiku_desk.bridge import install_event_loop

    loop = install_event_loop(qapp, loop_factory=_sliced_loop)  # every later call returns it
    yield loop
    asyncio.events._set_running_loop(None)
    loop.keep_registered = False
    if not loop.is_closed():
        loop.close()
    asyncio.set_event_loop(None)


@pytest.fixture(autouse=True)
def qloop(request, _session_qloop):
    """The app's loop, registered as running for the whole test (not for coroutine tests,
    which pytest-asyncio runs on a loop of its own)."""
    from haiku_desk.bridge import gui_thread_collector

    loop = _session_qloop
    if inspect.iscoroutinefunction(request.function):
        gui_thread_collector().stop()  # its timer would not run on pytest-asyncio's loop
        yield loop
        return
    gui_thread_collector().start()
    asyncio.set_event_loop(loop)
    loop.keep_registered = True
    asyncio.events._set_running_loop(loop)
    yield loop
    loop.keep_registered = False
    asyncio.events._set_running_loop(None)


@pytest.fixture
def services(qloop, db_path, config):
    """The app's services over a new library, opened (its documents listed), closed after."""
    from qt_helpers import run_until

    from haiku_desk.services import create_services

    services = create_services(db_path, config)
    opened = []
    services.library.opened.connect(lambda: opened.append(True))
    services.library.start()
    run_until(qloop, lambda: bool(opened), 180)
    yield services
    qloop.run_until_complete(services.library.aclose())
    services.pages.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last app test's fixtures are torn down, give garbage collection back to Python."""
    result = yield
    if nextitem is None or nextitem.path.parent != item.path.parent:
        from haiku_desk.bridge import gui_thread_collector

        collector = gui_thread_collector()
        if collector is not None:
            collector.stop()
    return result


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
    qloop.run_until_complete(service.aclose())
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


@pytest.fixture
def themed(qapp):
    """The theme may be applied to the test session's application; undone afterwards (the other
    tests run on the plain style)."""
    from PySide6.QtCore import QSettings
    from PySide6.QtGui import QPalette

    from haiku_desk.views import theme

    palette, sheet = QPalette(qapp.palette()), qapp.styleSheet()
    yield qapp
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)
    qapp.setProperty("haiku_scheme", None)
    qapp.setProperty("haiku_scheme_choice", None)
    QSettings().remove(theme.SETTINGS_KEY)
