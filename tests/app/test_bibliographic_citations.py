"""Author–year–page citations in the real window: an answer's sources and the citation panel
name a paper "Sørensen et al., 2021, p. 2" (the page of the cited text) and a note by its
title; Copy citation puts the quoted passage with that citation on the clipboard; Copy BibTeX /
CSL-JSON of an answer's sources come from the library's export; Edit details… stores a
person's corrections, which citations and BibTeX then use, across a relaunch; bad input is
named beside its field and stores nothing."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import shutil
from pathlib import Path

import bibtexparser
import pdf_factory
import pytest
from capabilities.scripting import answer, cite_top, search
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from qt_helpers import run_until

from app.chat_helpers import StreamingScript
from haiku.rag.client import HaikuRAG
from haiku.rag.config import load_config
from haiku.rag.store import schema
from haiku_desk.services import create_services
from haiku_desk.views.main_window import DEFAULT_SIZE, MainWindow

SLOW = 180
TITLE = "Otter Dens of the Northern Coast"
AUTHORS = ["Mette Sørensen", "Jonas Berg", "Ana Lima"]
DENS = "Otters den in rock crevices above the tide line, where the granite keeps the spray out. "
PUPS = "Pups stay in the den for two months while the mother hunts kelp crabs at dawn. "
STORMS = "Dens are abandoned after storms flood the lower galleries with shingle and weed. "
NOTES = "# Lantern Otters\n\nLantern otter pups stay near the den while lantern otters hunt glass eels.\n"


class Built:
    def __init__(self, root: Path, layout: pdf_factory.PdfLayout, paper_id: str, notes_id: str) -> None:
        self.root, self.layout, self.paper_id, self.notes_id = root, layout, paper_id, notes_id


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    root = tmp_path_factory.mktemp("bibliographic")
    layout = pdf_factory.make_paper_pdf(
        root / "otter-dens.pdf",
        title=TITLE,
        authors=AUTHORS,
        header_lines=["arXiv:2104.01234v1 [q-bio.PE] 2 Apr 2021"],
        paragraphs=[(DENS * 14).strip(), (PUPS * 14).strip(), (STORMS * 14).strip()],
        pages=3,
    )
    config = load_config()
    config.storage.data_dir = root / "data"
    config.embeddings.threads = 2

    async def ingest() -> tuple[str, str]:
        async with HaikuRAG(root / "library.lancedb", config, create=True) as client:
            paper = (await client.ingest_file(layout.path)).document
            notes = await client.create_document(NOTES, uri="notes://lantern-otters", title="Lantern Otters")
            return paper.id, notes.id

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:  # not on the app's loop
        paper_id, notes_id = pool.submit(asyncio.run, ingest()).result()
    return Built(root, layout, paper_id, notes_id)


@pytest.fixture
def library_copy(built, tmp_path) -> Path:
    """Each test its own copy of the built library (one test edits it)."""
    db = tmp_path / "library.lancedb"
    shutil.copytree(built.root / "library.lancedb", db)
    return db


def open_window(qloop, qtbot, db: Path, tmp_path: Path) -> MainWindow:
    config = load_config()
    config.storage.data_dir = tmp_path / "data"
    config.embeddings.threads = 2
    services = create_services(db, config)
    opened: list[bool] = []
    services.library.opened.connect(lambda: opened.append(True))
    services.library.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.citation_panel.open_in_system_viewer = False
    window.resize(*DEFAULT_SIZE)
    window.show()
    qtbot.waitExposed(window)
    return window


def close_window(qloop, window: MainWindow) -> None:
    qloop.run_until_complete(window.services.library.aclose())
    window.services.pages.close()


def ask(qloop, window: MainWindow, question: str, script: StreamingScript):
    pane = window.chat_pane
    window.services.models.use_model_instance(script.model)
    before = len(pane.chat.current.turns) if pane.chat.current else 0
    pane.input.setPlainText(question)
    pane.send_button.click()
    run_until(qloop, lambda: not pane.chat.busy and pane.chat.current is not None and len(pane.chat.current.turns) > before, SLOW)
    widget = pane.turn_widgets[-1]
    bibliography = window.services.bibliography
    ids = {c.document_id for c in widget.turn.citations}
    run_until(qloop, lambda: all(bibliography.is_loaded(i) for i in ids), SLOW)
    return widget


def both_cited(window: MainWindow, qloop):
    script = StreamingScript().play(search("pups stay in the den two months"), cite_top(3), answer("Pups stay in the den for two months."))
    return ask(qloop, window, "How long do pups stay in the den?", script)


def clipboard_after(qloop, action) -> str:
    """Run ``action`` (which copies, maybe once a future is done) and return the clipboard."""
    clipboard = QApplication.clipboard()
    clipboard.setText("(nothing yet)")
    action()
    run_until(qloop, lambda: clipboard.text() != "(nothing yet)", SLOW)
    return clipboard.text()


def test_sources_are_cited_author_year_page_and_copy_citation_copies_the_quoted_passage(qloop, qtbot, built, library_copy, tmp_path):
    window = open_window(qloop, qtbot, library_copy, tmp_path)
    try:
        widget = both_cited(window, qloop)
        pups_page = built.layout.blocks["p_1"].page
        assert pups_page == 2
        paper = [lb for lb in widget.source_cards if lb.citation.document_id == built.paper_id]
        notes = [lb for lb in widget.source_cards if lb.citation.document_id == built.notes_id]
        assert paper and notes
        pups = next(lb for lb in paper if "two months" in (lb.citation.matched_text or lb.citation.content))
        assert {b.page for b in pups.citation.boxes} == {pups_page}
        # the paper by author–year–page, its title beneath; the note (no authors) by its title
        assert pups.title == f"Sørensen et al., 2021, p. {pups_page}"
        assert f"[{pups.citation.index}] Sørensen et al., 2021, p. {pups_page}" in pups.text()
        assert TITLE in pups.text()
        assert notes[0].title == "Lantern Otters" and "et al." not in notes[0].text()
        chip = next(c for c in widget.chips if c.text() == str(pups.citation.index))
        assert chip.toolTip().startswith(f"Sørensen et al., 2021, p. {pups_page} — ")
        # a screen reader hears the same name (the chip and the card are Tab stops)
        assert chip.accessibleName() == f"Citation {pups.citation.index}: Sørensen et al., 2021, p. {pups_page}"
        assert pups.accessibleName() == f"Source {pups.citation.index}: Sørensen et al., 2021, p. {pups_page}"

        # Copy citation from the source's context menu
        menu = widget.source_menu(pups)
        copy = next(a for a in menu.actions() if a.text() == "Copy citation")
        passage = " ".join((pups.citation.matched_text or pups.citation.content).split())
        assert "Pups stay in the den for two months" in passage
        expected = f"“{passage}” (Sørensen et al., 2021, p. {pups_page})"
        assert clipboard_after(qloop, copy.trigger) == expected
        note_copy = next(a for a in widget.source_menu(notes[0]).actions() if a.text() == "Copy citation")
        assert clipboard_after(qloop, note_copy.trigger).endswith("” (Lantern Otters)")

        # the citation panel's header, and its Copy citation button and shortcut
        window.show_citation(pups.citation)
        panel = window.citation_panel
        assert panel.title.full_text == f"[{pups.citation.index}] Sørensen et al., 2021, p. {pups_page}"
        assert panel.headings.full_text.startswith(TITLE)
        assert panel.copy_button.isVisible()
        assert clipboard_after(qloop, panel.copy_button.click) == expected
        panel.copy_button.setFocus()
        assert clipboard_after(qloop, lambda: qtbot.keyClick(panel, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)) == expected
        window.show_citation(notes[0].citation)
        assert panel.title.full_text == f"[{notes[0].citation.index}] Lantern Otters"
        # at 1024×640 the header keeps the panel's whole width (the buttons are on the line
        # beneath, beside the title), so the author–year–page is not cut to "[1…"; the panel,
        # too narrow there to read a page in (~190 px), takes reader mode's room by itself
        from haiku_desk.views.main_window import READABLE_WIDTH

        window.resize(1024, 640)
        window.show_citation(pups.citation)
        run_until(qloop, lambda: window.width() <= 1024 and window.reader_mode.active and panel.width() >= READABLE_WIDTH, SLOW)
        inner = panel.width() - panel.layout().contentsMargins().left() - panel.layout().contentsMargins().right()
        assert panel.title.width() >= inner - 2
        assert panel.copy_button.geometry().top() >= panel.title.geometry().bottom()
        # and the page row is whole: the page number and every control, none squeezed or cut,
        # once the page is drawn (its label reads "p. 2/3 …" until then) and laid out again
        run_until(qloop, lambda: panel.page_label.text().endswith("cited"), SLOW)
        for _ in range(3):
            QApplication.processEvents()
        for widget in (panel.prev_button, panel.page_label, panel.next_button, panel.zoom_out_button,
                       panel.zoom_in_button, panel.fit_button):
            assert panel.nav.rect().contains(widget.geometry()), f"{widget.text()!r} is cut off"
            assert widget.width() >= widget.fontMetrics().horizontalAdvance(widget.text()), f"{widget.text()!r} is squeezed"
    finally:
        close_window(qloop, window)


def test_copy_bibtex_and_csl_json_of_an_answers_sources(qloop, qtbot, built, library_copy, tmp_path):
    window = open_window(qloop, qtbot, library_copy, tmp_path)
    try:
        widget = both_cited(window, qloop)
        menu = widget.context_menu()
        assert widget.copy_bibtex_action in menu.actions() and widget.copy_bibtex_action.isEnabled()
        bibtex = clipboard_after(qloop, widget.copy_bibtex_action.trigger)
        parsed = bibtexparser.parse_string(bibtex)
        assert not parsed.failed_blocks
        entries = {e.key: e for e in parsed.entries}
        assert len(entries) == 2  # one per cited document, however often cited
        paper = entries["sorensen2021otter"]
        assert paper["author"] == "Sørensen, Mette and Berg, Jonas and Lima, Ana"
        assert paper["year"] == "2021" and paper["eprint"] == "2104.01234"
        assert any("Lantern Otters" in e["title"] for e in parsed.entries if e.key != "sorensen2021otter")
        csl = json.loads(clipboard_after(qloop, widget.copy_csl_action.trigger))
        first = next(item for item in csl if item["id"] == "sorensen2021otter")
        assert [a["family"] for a in first["author"]] == ["Sørensen", "Berg", "Lima"]
        assert first["issued"] == {"date-parts": [[2021]]}
        # one source's BibTeX from its own menu
        pups = next(lb for lb in widget.source_cards if lb.citation.document_id == built.paper_id)
        one = next(a for a in widget.source_menu(pups).actions() if a.text() == "Copy BibTeX")
        assert [e.key for e in bibtexparser.parse_string(clipboard_after(qloop, one.trigger)).entries] == ["sorensen2021otter"]

        # the export of the answer: author–year–page sources, References, .bib and .csl.json beside it
        operation = window.chat_pane.export_to(str(tmp_path / "export"), turn=widget.turn)
        run_until(qloop, lambda: not operation.running, SLOW)
        (markdown,) = (tmp_path / "export").glob("*.md")
        text = markdown.read_text(encoding="utf-8")
        assert f"**Sørensen et al., 2021, p. 2 — {TITLE}" in text
        assert "## References" in text and f"- Sørensen et al. (2021). {TITLE}." in text
        assert "- Lantern Otters." in text
        exported = bibtexparser.parse_string(markdown.with_suffix(".bib").read_text(encoding="utf-8"))
        assert not exported.failed_blocks and "sorensen2021otter" in {e.key for e in exported.entries}
        assert len(exported.entries) == 2
        exported_csl = json.loads(markdown.with_suffix(".csl.json").read_text(encoding="utf-8"))
        assert {item["id"] for item in exported_csl} == {e.key for e in exported.entries}
        assert f"({markdown.stem}.bib)" in text
    finally:
        close_window(qloop, window)


def _versions(db: Path, config) -> dict[str, int]:
    async def read() -> dict[str, int]:
        async with HaikuRAG(db, config) as client:
            return {n: client.store.table(n).version for n in schema.TABLES if client.store.has_table(n)}

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, read()).result()


def _select(window: MainWindow, document_id: str) -> None:
    from haiku_desk.models.documents import ENTRY_ROLE

    pane = window.library_pane
    for row in range(pane.proxy.rowCount()):
        entry = pane.proxy.index(row, 0).data(ENTRY_ROLE)
        if entry.document_id == document_id:
            pane.select_keys([entry.key])
            assert [e.document_id for e in pane.selected_entries()] == [document_id]
            return
    raise AssertionError(f"no row for {document_id}")


def test_edit_details_is_checked_stored_without_reembedding_and_used_by_citations_after_a_relaunch(qloop, qtbot, built, library_copy, tmp_path):
    window = open_window(qloop, qtbot, library_copy, tmp_path)
    try:
        widget = both_cited(window, qloop)
        pups = next(lb for lb in widget.source_cards if lb.citation.document_id == built.paper_id)
        window.show_citation(pups.citation)
        library = window.services.library
        entry = library.entry_for_document(built.paper_id)
        library.rename(entry.key, "My otter paper")  # the person's own name for the row (F2)
        run_until(qloop, lambda: library.entry_for_document(built.paper_id).name == "My otter paper", SLOW)
        # the row's context menu has the hook's action
        _select(window, built.paper_id)
        assert window.details.action in window.library_pane.extra_actions
        window.details.action.trigger()
        run_until(qloop, lambda: window.details.dialog is not None and window.details.dialog.isVisible(), SLOW)
        dialog = window.details.dialog
        # prefilled from what was read from the PDF
        assert dialog.title_edit.text() == TITLE
        assert dialog.authors_edit.toPlainText() == "Sørensen, Mette\nBerg, Jonas\nLima, Ana"
        assert (dialog.year_edit.text(), dialog.doi_edit.text(), dialog.venue_edit.text()) == ("2021", "", "")
        assert "first page" in dialog.source_label.text()

        # bad input: named beside its field, the dialog stays, nothing is written
        dialog.year_edit.setText("twenty21")
        dialog.save_button.click()
        assert dialog.isVisible() and dialog.errors["year"].isVisible()
        assert "year must be a year" in dialog.errors["year"].text()
        dialog.year_edit.setText("2022")
        dialog.doi_edit.setText("10.12/short")
        dialog.save_button.click()
        assert dialog.isVisible() and dialog.errors["doi"].isVisible() and not dialog.errors["year"].isVisible()
        assert dialog.pending is None  # nothing was sent to the library

        # a good edit
        dialog.doi_edit.setText("https://doi.org/10.1234/otters.2022")
        dialog.venue_edit.setText("Journal of Mustelid Ecology")
        dialog.authors_edit.setPlainText("Sørensen, Mette\nBerg, Jonas")
        saved: list[str] = []
        dialog.saved.connect(saved.append)
        dialog.save_button.click()
        run_until(qloop, lambda: bool(saved), SLOW)
        assert window.details.dialog is None  # closed (and deleted)
        # the title was not touched in the form: the row keeps the person's name for it
        assert library.entry_for_document(built.paper_id).name == "My otter paper"
        # the answer already shown and the citation panel follow at once
        run_until(qloop, lambda: pups.title == "Sørensen and Berg, 2022, p. 2", SLOW)
        assert window.citation_panel.title.full_text == f"[{pups.citation.index}] Sørensen and Berg, 2022, p. 2"
        bibtex = clipboard_after(qloop, widget.copy_bibtex_action.trigger)
        paper = next(e for e in bibtexparser.parse_string(bibtex).entries if e.key.startswith("sorensen"))
        assert (paper.key, paper["doi"], paper["year"]) == ("sorensen2022otter", "10.1234/otters.2022", "2022")
        assert paper["author"] == "Sørensen, Mette and Berg, Jonas"
    finally:
        close_window(qloop, window)

    # a relaunch on the same library: the edit is what the citations and the dialog use;
    # only the documents table moved (nothing re-embedded)
    config = load_config()
    versions = _versions(library_copy, config)
    original = _versions(built.root / "library.lancedb", config)
    assert {n for n in versions if versions[n] != original.get(n)} == {schema.DOCUMENTS}
    window = open_window(qloop, qtbot, library_copy, tmp_path / "again")
    try:
        widget = both_cited(window, qloop)
        pups = next(lb for lb in widget.source_cards if "two months" in (lb.citation.matched_text or lb.citation.content))
        assert pups.title == "Sørensen and Berg, 2022, p. 2"
        _select(window, built.paper_id)
        window.details.open_for_selection()
        run_until(qloop, lambda: window.details.dialog is not None, SLOW)
        dialog = window.details.dialog
        assert (dialog.year_edit.text(), dialog.doi_edit.text()) == ("2022", "10.1234/otters.2022")
        assert "You edited" in dialog.source_label.text()
        dialog.reject()
    finally:
        close_window(qloop, window)
