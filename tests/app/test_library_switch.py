"""Opening another library: the current one shuts down as for Quit, ``library_changed`` tells
the services that follow the library, and the watch folders are the new library's own."""

from __future__ import annotations

from qt_helpers import run_until

from haiku_desk.services.library import DocumentState, uri_for

SLOW = 180


def test_switching_libraries_switches_documents_and_watch_folders(qloop, library, tmp_path, db_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    note = folder / "otters.md"
    note.write_text("# Otters\n\nLantern otters hold hands while they sleep.\n")
    library.watch.add(folder)
    run_until(qloop, lambda: library.entry(uri_for(note)) is not None and library.entry(uri_for(note)).searchable, SLOW)
    assert (db_path / "haiku-desk" / "watched.json").is_file()

    changed, opened = [], []
    library.library_changed.connect(changed.append)
    library.opened.connect(lambda: opened.append(True))
    other = tmp_path / "other.lancedb"
    assert qloop.run_until_complete(library.open_library(other))
    assert changed == [str(other.resolve())] and opened == [True]
    assert library.db_path == other.resolve() and library.app_folder == other.resolve() / "haiku-desk"
    assert library.entries == [] and library.watch.folders == []
    assert qloop.run_until_complete(library.client.list_documents()) == []

    assert qloop.run_until_complete(library.open_library(db_path))
    assert changed[-1] == str(db_path.resolve())
    assert library.watch.folders == [str(folder.resolve())]
    run_until(qloop, lambda: library.entry(uri_for(note)) is not None, SLOW)
    assert library.entry(uri_for(note)).searchable  # its interrupted embedding resumes
    run_until(qloop, lambda: library.entry(uri_for(note)).state is DocumentState.HYBRID, SLOW)


def test_the_window_has_the_library_and_log_entries(qtbot, qloop, library):
    from PySide6.QtGui import QAction

    from haiku_desk.services import create_services
    from haiku_desk.views.main_window import MainWindow

    services = create_services(library.db_path.parent / "w.lancedb", library.config)
    window = MainWindow(services)
    qtbot.addWidget(window)
    names = {a.objectName() for a in window.findChildren(QAction)}
    assert {"new_library", "open_library", "open_log_folder"} <= names
    menus = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions() if a.menu()}
    file_items = [a.text() for a in menus["File"].actions()]
    assert file_items[:3] == ["New library…", "Open library…", "Recent libraries"]
    help_items = [a.text() for a in menus["Help"].actions() if not a.isSeparator()]
    assert help_items[-2:] == ["Open log folder", "&About haiku-desk"]  # About last, as is usual
    services.pages.close()


def test_only_a_library_that_opened_is_remembered(qtbot, qloop, services, tmp_path):
    """File › Recent lists libraries that opened: a switch to one that fails to open (here a
    file, not a folder) does not add it; a switch that opens does."""
    from haiku_desk.services.library_choice import recent_libraries
    from haiku_desk.views.main_window import MainWindow

    window = MainWindow(services)
    qtbot.addWidget(window)
    library = services.library
    failed, opened = [], []
    library.open_failed.connect(failed.append)
    library.opened.connect(lambda: opened.append(True))

    broken = tmp_path / "broken.lancedb"
    broken.write_text("not a library")
    qloop.run_until_complete(library.open_library(broken))
    run_until(qloop, lambda: bool(failed), SLOW)
    assert str(broken.resolve()) not in recent_libraries()

    other = tmp_path / "other.lancedb"
    assert qloop.run_until_complete(library.open_library(other))
    run_until(qloop, lambda: bool(opened), SLOW)
    assert recent_libraries()[0] == str(other.resolve())
    assert str(broken.resolve()) not in recent_libraries()
