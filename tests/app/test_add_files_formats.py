"""Add files offers exactly what ingests: Word, PowerPoint, Excel, ODT and EPUB among the
documents, nothing that would be refused; a type that is refused (an old .doc) says in plain
words to save it as PDF. A citation of a slide opens in the citation panel with its passage
and its location (the slide), without a page label it does not have."""

from __future__ import annotations

import re
from pathlib import Path

from office_factory import make_docx, make_epub, make_pptx
from PySide6.QtWidgets import QFileDialog
from qt_helpers import run_until

from haiku.rag.citations import Citation
from haiku.rag.errors import IngestCategory
from haiku.rag.formats import supported_extensions
from haiku_desk.services.failures import hint
from haiku_desk.services.library import DocumentState, uri_for
from haiku_desk.services.pages import PagesService
from haiku_desk.views.citation_panel import CitationPanel
from haiku_desk.views.library_pane import LibraryPane

SLOW = 240


def test_add_files_offers_exactly_what_ingests_and_refuses_the_rest_in_plain_words(
    qloop, qtbot, library, tmp_path: Path, monkeypatch
):
    pane = LibraryPane(library)
    qtbot.addWidget(pane)
    docx = make_docx(tmp_path / "notes.docx")
    epub = make_epub(tmp_path / "keepers.epub")
    old_word = tmp_path / "minutes.doc"
    old_word.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 1024)
    asked: list[str] = []

    def choose(parent, caption, folder, filters, *args, **kwargs):
        asked.append(filters)
        return [str(docx), str(epub), str(old_word)], filters.split(";;")[0]

    monkeypatch.setattr(QFileDialog, "getOpenFileNames", choose)
    pane.choose_files()

    (filters,) = asked
    entries = filters.split(";;")
    assert entries[0].startswith("Documents (")
    documents = set(re.findall(r"\*(\.\w+)", entries[0]))
    assert {".pdf", ".docx", ".pptx", ".xlsx", ".odt", ".epub", ".html", ".md", ".txt"} <= documents
    offered = {pattern for entry in entries for pattern in re.findall(r"\*(\S*?)[ )]", entry)}
    assert offered == set(supported_extensions())  # exactly what ingests: no "All files (*)"
    assert ".doc" not in offered

    run_until(
        qloop,
        lambda: all(
            (e := library.entry(uri_for(p))) is not None and (e.searchable or e.state is DocumentState.FAILED)
            for p in (docx, epub, old_word)
        ),
        SLOW,
    )
    assert library.entry(uri_for(docx)).searchable and library.entry(uri_for(epub)).searchable
    refused = library.entry(uri_for(old_word))
    assert refused.state is DocumentState.FAILED and refused.category is IngestCategory.UNSUPPORTED_TYPE
    assert refused.reason is not None and ".doc files aren't supported yet — save it as PDF" in refused.reason
    assert "pip" not in refused.reason and "docling" not in refused.reason
    assert hint(refused.category).startswith("This file type isn't supported yet — save it as PDF")


def test_a_slide_citation_shows_its_passage_and_names_the_slide(qloop, qtbot, library, notifications, tmp_path: Path):
    deck = make_pptx(tmp_path / "survey.pptx")
    library.add_paths([deck])
    run_until(qloop, lambda: (e := library.entry(uri_for(deck))) is not None and (e.searchable or e.reason), SLOW)
    entry = library.entry(uri_for(deck))
    assert entry.searchable, entry.reason
    results = qloop.run_until_complete(library.search_passages("kelp harbour seals", limit=1))
    citation = Citation.from_result(4, results[0].chunk_id, results[0])
    pages = PagesService(library, notifications)
    panel = CitationPanel(pages)
    panel.open_in_system_viewer = False
    qtbot.addWidget(panel)
    panel.resize(500, 700)
    panel.show()
    qtbot.waitExposed(panel)
    try:
        panel.show_citation(citation)
        kinds = []
        panel.document_shown.connect(kinds.append)
        run_until(qloop, lambda: bool(kinds))
        assert kinds == ["text"]  # the deck's text, the passage highlighted in it
        assert "Kelp forests sheltered seventeen harbour seals" in panel.text_reader.passage_text()
        assert panel.title.full_text == "[4] Estuary survey" and "p." not in panel.title.suffix
        assert panel.headings.full_text == "Slide 2: Results"
    finally:
        pages.close()
