"""The library pane's table: what a waiting file shows, and how the columns share the width."""

from __future__ import annotations

from PySide6.QtCore import Qt
from qt_helpers import run_until

from haiku_desk.models.documents import NAME, PROGRESS, PROGRESS_ROLE, STATE
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
