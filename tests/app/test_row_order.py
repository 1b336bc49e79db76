"""The library's rows keep the order the files arrived in, within a session and after a
relaunch: stored documents ingested in the same second (which the store would list by URI)
and a failed file that arrived first (which used to come back after every stored one)."""

from __future__ import annotations

from qt_helpers import run_until

from haiku_desk.models.documents import ENTRY_ROLE
from haiku_desk.services.library import DocumentState, LibraryService, uri_for
from haiku_desk.services.notifications import Notifications
from haiku_desk.views.library_pane import LibraryPane

SLOW = 180


def shown_order(pane: LibraryPane) -> list[str]:
    return [pane.proxy.index(r, 0).data(ENTRY_ROLE).key for r in range(pane.proxy.rowCount())]


def open_pane(qtbot, qloop, db_path, config) -> tuple[LibraryService, LibraryPane]:
    library = LibraryService(db_path, config, Notifications())
    pane = LibraryPane(library)  # before the start, as in the window
    qtbot.addWidget(pane)
    opened: list[bool] = []
    library.opened.connect(lambda: opened.append(True))
    library.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    return library, pane


def test_rows_come_back_in_the_order_they_arrived(qtbot, qloop, db_path, config, tmp_path, make_pdf):
    broken = tmp_path / "z-broken.pdf"
    broken.write_bytes(b"this is not a pdf at all" * 50)
    files = [
        broken,
        make_pdf(tmp_path / "c.pdf", "Cormorants nest on the breakwater."),
        make_pdf(tmp_path / "a.pdf", "Anchovies school below the pier."),
        make_pdf(tmp_path / "b.pdf", "Barnacles crust the old buoy."),
    ]
    arrival = [uri_for(f) for f in files]
    library, pane = open_pane(qtbot, qloop, db_path, config)
    for path in files:  # one at a time, as dropped
        library.add_paths([path])

    def settled(service: LibraryService) -> bool:
        entries = [service.entry(k) for k in arrival]
        return all(e is not None and not e.busy for e in entries)

    run_until(qloop, lambda: settled(library), SLOW)
    assert library.entry(arrival[0]).state is DocumentState.FAILED
    assert shown_order(pane) == arrival
    qloop.run_until_complete(library.aclose())

    again, pane = open_pane(qtbot, qloop, db_path, config)
    try:
        assert shown_order(pane) == arrival
        assert [e.key for e in again.entries] == arrival
    finally:
        qloop.run_until_complete(again.aclose())
