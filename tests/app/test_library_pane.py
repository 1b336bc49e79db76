"""The library pane's table: what a waiting file shows, and how the columns share the width."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from qt_helpers import run_until

from haiku_desk.models.documents import (
    ENTRY_ROLE,
    FILE_NAME_ROLE,
    NAME,
    PROGRESS,
    PROGRESS_ROLE,
    STATE,
)
from haiku_desk.services.library import DocumentState, uri_for
from haiku_desk.views.library_pane import LibraryPane

SLOW = 180
LONG_NAME = "calibrating-low-cost-capacitive-soil-moisture-probes-for-sandy-loam-orchards.pdf"


def test_queued_files_say_queued_without_a_busy_bar_and_names_take_the_spare_width(
    qloop, qtbot, library, tmp_path, make_pdf
):
    pane = LibraryPane(library)
    qtbot.addWidget(pane)
    pane.resize(420, 500)
    pane.show()
    qtbot.waitExposed(pane)
    files = [
        make_pdf(tmp_path / name, f"Line {i} about soil moisture probes.")
        for i, name in enumerate((LONG_NAME, "b.pdf", "c.pdf"))
    ]
    progress_seen: dict[str, set[object]] = {uri_for(f): set() for f in files}

    def record(*_: object) -> None:
        for row in range(pane.model.rowCount()):
            entry = pane.model.entry_at(row)
            if entry.key in progress_seen:
                value = pane.model.data(pane.model.index(row, PROGRESS), PROGRESS_ROLE)
                progress_seen[entry.key].add((entry.state, value))

    library.entry_changed.connect(record)
    library.add_paths(files)
    for row in range(pane.model.rowCount()):
        index = pane.model.index(row, PROGRESS)
        assert pane.model.entry_at(row).state is DocumentState.QUEUED
        assert pane.model.data(index, PROGRESS_ROLE) is None  # painted as text, not a bar
        assert index.data() == "queued"
    run_until(qloop, lambda: all(library.entry(uri_for(f)).state is DocumentState.HYBRID for f in files), SLOW)
    library.entry_changed.disconnect(record)

    for seen in progress_seen.values():
        assert (DocumentState.QUEUED, -1) not in seen and (DocumentState.QUEUED, None) in seen
    assert any(state is DocumentState.PARSING for seen in progress_seen.values() for state, _ in seen)

    # State has a fixed width (what it shows never resizes it; progress shows in it as a bar);
    # the name has the rest, and both fit without a horizontal scrollbar.
    header = pane.table.horizontalHeader()
    table_width = pane.table.viewport().width()
    assert pane.model.columnCount() == 2 and PROGRESS == STATE
    assert header.sectionSize(NAME) == table_width - header.sectionSize(STATE)
    assert header.sectionSize(NAME) > 240
    assert not pane.table.horizontalScrollBar().isVisible()
    # A name too long for its column ends in "…"; the tooltip holds all of it.
    entry = library.entry(uri_for(files[0]))
    assert pane.table.fontMetrics().horizontalAdvance(entry.name) > header.sectionSize(NAME)
    index = pane.model.index(pane.model.row_of(entry.key), NAME)
    assert index.data(Qt.ItemDataRole.ToolTipRole).splitlines()[0] == entry.name


# --- scope, order, renaming ------------------------------------------------------------------


def _titled_pdf(path, title: str, body: str):
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 110), title, fontname="hebo", fontsize=22)
    for i in range(8):
        page.insert_text((72, 170 + 14 * i), f"{body} (line {i})", fontname="helv", fontsize=10)
    doc.save(path)
    doc.close()
    return path


def _pane(qtbot, library, width=420, height=520):
    pane = LibraryPane(library)
    qtbot.addWidget(pane)
    pane.resize(width, height)
    pane.show()
    qtbot.waitExposed(pane)
    return pane


def _row_keys(pane) -> list[str]:
    return [pane.proxy.index(r, NAME).data(ENTRY_ROLE).key for r in range(pane.proxy.rowCount())]


def _check_box_center(pane, row: int):
    from PySide6.QtWidgets import QStyle, QStyleOptionViewItem

    index = pane.proxy.index(row, NAME)
    option = QStyleOptionViewItem()
    pane.table.itemDelegate().initStyleOption(option, index)
    option.rect = pane.table.visualRect(index)
    option.widget = pane.table
    rect = pane.table.style().subElementRect(QStyle.SubElement.SE_ItemViewItemCheckIndicator, option, pane.table)
    return rect.center()


def _ingest(qloop, library, files):
    library.add_paths(files)
    run_until(qloop, lambda: all((e := library.entry(uri_for(f))) is not None and e.searchable for f in files), SLOW)


def test_rows_keep_their_place_while_titles_resolve_and_a_click_selects_the_row_clicked(
    qloop, qtbot, library, tmp_path
):
    # file names a < b < c; their titles sort the other way round (Z, M, A)
    files = [
        _titled_pdf(tmp_path / "a-notes.pdf", "Zebra Migration Across the Delta", "Zebras cross the delta."),
        _titled_pdf(tmp_path / "b-notes.pdf", "Marmot Whistles in Alpine Meadows", "Marmots whistle."),
        _titled_pdf(tmp_path / "c-notes.pdf", "Aardvark Burrows of the Savanna", "Aardvarks dig."),
    ]
    pane = _pane(qtbot, library)
    library.add_paths(files)
    arrival = [uri_for(f) for f in files]
    assert _row_keys(pane) == arrival
    # a click on the last (queued) row selects that file, and it stays selected where it is
    target = pane.table.visualRect(pane.proxy.index(2, STATE)).center()
    qtbot.mouseClick(pane.table.viewport(), Qt.MouseButton.LeftButton, pos=target)
    assert pane.selected_keys() == [arrival[2]]
    run_until(qloop, lambda: all(library.entry(k).searchable for k in arrival), SLOW)
    assert library.entry(arrival[0]).name == "Zebra Migration Across the Delta"  # titles resolved
    assert _row_keys(pane) == arrival  # ...and no row moved
    assert pane.selected_keys() == [arrival[2]]
    assert pane.proxy.index(2, NAME).data(FILE_NAME_ROLE).startswith("c-notes.pdf")
    # sorting is the user's choice: a header click sorts by title
    header = pane.table.horizontalHeader()
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(header.sectionViewportPosition(NAME) + 20, 5))
    assert _row_keys(pane) == [arrival[2], arrival[1], arrival[0]]


def test_selecting_rows_never_changes_the_chat_scope_but_ticking_does(qloop, qtbot, library, tmp_path, make_pdf):
    files = [make_pdf(tmp_path / f"{n}.pdf", f"Notes about {n} in the orchard.") for n in ("apples", "pears", "plums")]
    pane = _pane(qtbot, library)
    _ingest(qloop, library, files)
    ids = [library.entry(uri_for(f)).document_id for f in files]
    scopes: list[object] = []
    pane.scopeChanged.connect(scopes.append)

    # click a row (its State cell), extend with Shift+Down, move with the arrows, Tab in and out
    qtbot.mouseClick(pane.table.viewport(), Qt.MouseButton.LeftButton, pos=pane.table.visualRect(pane.proxy.index(0, STATE)).center())
    qtbot.keyClick(pane.table, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)
    assert len(pane.selected_keys()) == 2
    qtbot.keyClick(pane.table, Qt.Key.Key_Down)
    pane.search.setFocus()
    qtbot.keyClick(pane.search, Qt.Key.Key_Tab)
    qtbot.keyClick(pane.table, Qt.Key.Key_Tab)
    assert scopes == [] and pane.scope() is None

    # ticking does: untick the first document, then tick "All documents" again
    qtbot.mouseClick(pane.table.viewport(), Qt.MouseButton.LeftButton, pos=_check_box_center(pane, 0))
    assert scopes[-1] == tuple(sorted(ids[1:])) and pane.scope() == tuple(sorted(ids[1:]))
    assert pane.scope_all.checkState() == Qt.CheckState.PartiallyChecked
    assert pane.proxy.index(0, NAME).data(Qt.ItemDataRole.CheckStateRole) == Qt.CheckState.Unchecked
    qtbot.mouseClick(pane.scope_all, Qt.MouseButton.LeftButton, pos=QPoint(8, pane.scope_all.height() // 2))
    assert scopes[-1] is None and pane.scope_all.checkState() == Qt.CheckState.Checked
    qtbot.mouseClick(pane.scope_all, Qt.MouseButton.LeftButton, pos=QPoint(8, pane.scope_all.height() // 2))  # all ticked: a click unticks all
    assert scopes[-1] == () and pane.scope_description() == "No documents"

    # Space on the current row ticks it (keyboard only)
    pane.table.setFocus()
    pane.table.setCurrentIndex(pane.proxy.index(1, NAME))
    qtbot.keyClick(pane.table, Qt.Key.Key_Space)
    assert scopes[-1] == (ids[1],)
    assert pane.scope_description().startswith("1 document: ")

    # set_scope (a conversation's own scope) shows it without emitting
    count = len(scopes)
    pane.set_scope((ids[2],))
    assert len(scopes) == count and pane.scope() == (ids[2],)
    # a document in the scope that leaves the library leaves the scope
    library.delete([uri_for(files[2])])
    run_until(qloop, lambda: library.entry(uri_for(files[2])) is None, SLOW)
    assert scopes[-1] == ()


def test_rename_with_f2_is_stored_shown_and_survives_a_reingest(qloop, qtbot, library, tmp_path):
    pdf = _titled_pdf(tmp_path / "field-notes.pdf", "Marmot Whistles in Alpine Meadows", "Marmots whistle at dawn.")
    pane = _pane(qtbot, library)
    _ingest(qloop, library, [pdf])
    key = uri_for(pdf)
    pane.select_keys([key])
    pane.table.setFocus()
    qtbot.keyClick(pane.table, Qt.Key.Key_F2)
    dialog = pane.rename_dialog
    assert dialog is not None and dialog.textValue() == "Marmot Whistles in Alpine Meadows"
    dialog.setTextValue("  My marmot notes  ")
    dialog.accept()
    run_until(qloop, lambda: library.entry(key).name == "My marmot notes")
    document = qloop.run_until_complete(library.client.get_document(library.entry(key).document_id))
    assert document.title == "My marmot notes" and document.metadata["user_title"] == "My marmot notes"
    assert pane.proxy.index(0, NAME).data(FILE_NAME_ROLE).startswith("field-notes.pdf")

    # the file changes and is re-ingested: the user's title stays
    run_until(qloop, lambda: library.entry(key).state is DocumentState.HYBRID, SLOW)
    generation = library.entry(key).generation
    _titled_pdf(pdf, "Alpine Marmots, Second Edition", "Marmots whistle at dusk too.")
    library.reingest([key])
    run_until(qloop, lambda: library.entry(key).generation != generation and library.entry(key).searchable, SLOW)
    document = qloop.run_until_complete(library.client.get_document(library.entry(key).document_id))
    assert document.title == "My marmot notes"
    assert document.metadata["ingest_title"] == "Alpine Marmots, Second Edition"

    # an empty name goes back to the title found in the file
    library.rename(key, None)
    run_until(qloop, lambda: library.entry(key).name == "Alpine Marmots, Second Edition")
