"""Deleting a document that is a row of evidence tables: the delete confirmation names the
tables (the tester's 14:35 defect: it said nothing) and says the row stays, marked removed from
the library, with its filled values; the table then shows the row so, its values kept, a click
on one opening its kept quote, and it is not answered again.

Real parts: generated papers ingested into a LanceDB library in a temp dir, evidence tables
made with haiku.rag's extraction package, the app's services and main window (offscreen).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path

from extraction.papers import library_config, make_papers
from PySide6.QtCore import Qt
from qt_helpers import run_until

from app.evidence_window import open_window
from haiku.rag.client import HaikuRAG
from haiku.rag.extraction import FillOptions, create_table, fill_table
from haiku_desk.services.library import uri_for

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
            review = await create_table(client, "Model review", ["Dataset"], document_ids=[ids[0], ids[1]])
            await fill_table(client, review.id, FillOptions(mode="search-only"))
            await create_table(client, "Other", ["Dataset"], document_ids=[ids[2]])
            return ids

    # On a thread of its own: the app's qasync loop is registered as running in app tests.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        ids = pool.submit(asyncio.run, ingest()).result()
    return db_path, ids, [uri_for(p.path) for p in papers]


def _consequence(pane) -> str:
    dialog = pane.delete_dialog
    assert dialog is not None
    return dialog.informativeText()


def _answer(pane, button: str) -> None:
    dialog = pane.delete_dialog
    next(b for b in dialog.buttons() if b.text() == button).click()


def test_the_delete_confirmation_names_the_evidence_tables_that_lose_a_row(qtbot, qapp, qloop, tmp_path):
    db_path, ids, uris = _build(tmp_path)
    window = open_window(qtbot, qapp, qloop, db_path, tmp_path)
    pane = window.library_pane
    try:
        pane.confirm_delete([uris[0]])  # a row of two tables, named by name
        assert "It is a row of 2 evidence tables (Model review, Resume test): the row stays, marked removed from the library, with its filled values." in (
            _consequence(pane)
        )
        _answer(pane, "Cancel")
        qtbot.waitUntil(lambda: pane.delete_dialog is None)

        pane.confirm_delete([uris[1]])
        assert "It is a row of the evidence table “Model review”: the row stays, marked removed from the library, with its filled values." in _consequence(pane)
        _answer(pane, "Cancel")
        qtbot.waitUntil(lambda: pane.delete_dialog is None)

        pane.confirm_delete([uris[1], uris[2]])
        assert "They are rows of 3 evidence tables (Model review, Other, Resume test): the rows stay, marked removed from the library, with their filled values." in (
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
        qtbot.waitUntil(lambda: pane.delete_dialog is None)

        # the table keeps the deleted document's row, marked, with its value
        evidence = window.services.evidence
        review = next(t for t in evidence.tables if t.name == "Model review")
        state = qloop.run_until_complete(evidence.open_table(review.id))
        assert state.rows == [ids[0]] and list(state.removed) == [ids[1]]
        assert state.total == 1  # what a fill answers: the documents still there
        table_pane = window.evidence_pane
        model = table_pane.model
        row = model._row_of[ids[1]]
        title = model.index(row, 0).data()
        assert title.endswith("— removed from the library")
        column = state.columns[0].id
        kept = state.cell(ids[1], column)
        assert kept is not None and kept.value and kept.citations
        index = table_pane.proxy_index(ids[1], column)
        assert index.data() and not (index.flags() & Qt.ItemFlag.ItemIsEditable)
        kinds: list[str] = []
        window.citation_panel.document_shown.connect(kinds.append)
        table_pane.open_cell(index)  # its citation opens the kept quote
        run_until(qloop, lambda: bool(kinds), SLOW)
        assert kinds == ["removed"]
        assert "removed from the library" in window.citation_panel.message_text()
        assert kept.citations[0].content.split()[0] in window.citation_panel.message_text()
    finally:
        window.close()
        qloop.run_until_complete(window.quit_flow.wait())


def test_a_document_in_no_table_is_deleted_with_no_word_about_tables(qtbot, qapp, qloop, tmp_path):
    db_path, _ids, uris = _build(tmp_path)
    window = open_window(qtbot, qapp, qloop, db_path, tmp_path)
    pane = window.library_pane
    try:
        pane.confirm_delete([uris[3]])
        assert "evidence table" not in _consequence(pane)
        assert "The files on disk are not touched." in _consequence(pane)
        _answer(pane, "Cancel")
    finally:
        window.close()
        qloop.run_until_complete(window.quit_flow.wait())
