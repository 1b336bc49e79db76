"""Deleting a document takes its row and filled cells out of every evidence table: the delete
confirmation says so, naming the tables (the tester's 14:35 defect: it said nothing, and the
rows were gone silently).

Real parts: generated papers ingested into a LanceDB library in a temp dir, evidence tables
made with haiku.rag's extraction package, the app's services and main window (offscreen).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path

from extraction.papers import library_config, make_papers
from qt_helpers import run_until

from haiku.rag.client import HaikuRAG
from haiku.rag.extraction import create_table
from haiku_desk.services import create_services
from haiku_desk.services.library import uri_for
from haiku_desk.views.main_window import MainWindow

SLOW = 180


def _build(root: Path) -> tuple[Path, list[str], list[str]]:
    """Four papers; "Model review" has rows for the first two, "Resume test" for the first
    and the third, "Other" for the third only; the fourth is in no table. Returns the
    library, the ids and the URIs."""
    papers = make_papers(root, 4)
    db_path = root / "library.lancedb"

    async def ingest() -> list[str]:
        async with HaikuRAG(db_path, library_config(root), create=True) as client:
            ids = []
            for paper in papers:
                outcome = await client.ingest_file(paper.path)
                assert outcome.document is not None, outcome.reason
                ids.append(outcome.document.id)
            await create_table(client, "Resume test", ["Sample size"], document_ids=[ids[0], ids[2]])
            await create_table(client, "Model review", ["Dataset"], document_ids=[ids[0], ids[1]])
            await create_table(client, "Other", ["Dataset"], document_ids=[ids[2]])
            return ids

    # On a thread of its own: the app's qasync loop is registered as running in app tests.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        ids = pool.submit(asyncio.run, ingest()).result()
    return db_path, ids, [uri_for(p.path) for p in papers]


def _window(qtbot, qapp, qloop, db_path: Path, root: Path) -> MainWindow:
    qapp.setQuitOnLastWindowClosed(False)
    services = create_services(db_path, library_config(root))
    opened: list[bool] = []
    services.library.opened.connect(lambda: opened.append(True))
    services.library.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    assert services.evidence is not None
    qloop.run_until_complete(services.evidence.wait_started())
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.quit_flow.manage_shutdown = True
    window.show()
    qtbot.waitExposed(window)
    return window


def _consequence(pane) -> str:
    dialog = pane.delete_dialog
    assert dialog is not None
    return dialog.informativeText()


def _answer(pane, button: str) -> None:
    dialog = pane.delete_dialog
    next(b for b in dialog.buttons() if b.text() == button).click()


def test_the_delete_confirmation_names_the_evidence_tables_that_lose_a_row(qtbot, qapp, qloop, tmp_path):
    db_path, ids, uris = _build(tmp_path)
    window = _window(qtbot, qapp, qloop, db_path, tmp_path)
    pane = window.library_pane
    try:
        pane.confirm_delete([uris[0]])  # a row of two tables, named by name
        assert "It is a row of 2 evidence tables (Model review, Resume test); its filled cells go with it." in (
            _consequence(pane)
        )
        _answer(pane, "Cancel")
        qtbot.waitUntil(lambda: pane.delete_dialog is None)

        pane.confirm_delete([uris[1]])
        assert "It is a row of the evidence table “Model review”; its filled cells go with it." in _consequence(pane)
        _answer(pane, "Cancel")
        qtbot.waitUntil(lambda: pane.delete_dialog is None)

        pane.confirm_delete([uris[1], uris[2]])
        assert "They are rows of 3 evidence tables (Model review, Other, Resume test); their filled cells go with them." in (
            _consequence(pane)
        )
        _answer(pane, "Cancel")
        qtbot.waitUntil(lambda: pane.delete_dialog is None)

        pane.confirm_delete([uris[1]])  # deleted: the table says the same afterwards
        _answer(pane, "Delete")
        run_until(qloop, lambda: window.services.library.entry(uris[1]) is None and not window.services.library.busy, SLOW)
        pane.confirm_delete([uris[0]])
        assert "It is a row of 2 evidence tables (Model review, Resume test)" in _consequence(pane)
        _answer(pane, "Cancel")
    finally:
        window.close()
        qloop.run_until_complete(window.quit_flow.wait())


def test_a_document_in_no_table_is_deleted_with_no_word_about_tables(qtbot, qapp, qloop, tmp_path):
    db_path, _ids, uris = _build(tmp_path)
    window = _window(qtbot, qapp, qloop, db_path, tmp_path)
    pane = window.library_pane
    try:
        pane.confirm_delete([uris[3]])
        assert "evidence table" not in _consequence(pane)
        assert "The files on disk are not touched." in _consequence(pane)
        _answer(pane, "Cancel")
    finally:
        window.close()
        qloop.run_until_complete(window.quit_flow.wait())
