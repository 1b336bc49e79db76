"""The pages a citation is labelled with are those of the cited text, not of the context
widened around it: a real PDF ingested, searched and expanded by the library, the citation
shown by the app's sources list and citation panel."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pymupdf
from pytestqt.qtbot import QtBot
from qt_helpers import run_until

from haiku.rag.citations import Citation
from haiku.rag.client import HaikuRAG
from haiku_desk.services.conversations import Turn
from haiku_desk.views.chat_pane import TurnWidget

WORDS = (
    "The selector reads each candidate paper in full and weighs its abstract, its method and "
    "its results against the query before it decides whether the paper is kept. "
)
PARAGRAPHS = [
    "Selection begins on the first page. " + WORDS * 5,
    "The acceptance threshold of the selector was tuned on held out queries. " + WORDS * 5,
    "Recall on the third page stays high because expansion follows citations. " + WORDS * 5,
]


def _three_page_section() -> bytes:
    """One section, "2 Method", whose three long paragraphs sit on pages 1, 2 and 3."""
    doc = pymupdf.open()
    for number, paragraph in enumerate(PARAGRAPHS, start=1):
        page = doc.new_page()
        top = 72
        if number == 1:
            page.insert_text((72, 90), "2 Method", fontname="hebo", fontsize=16)
            top = 110
        page.insert_textbox(pymupdf.Rect(72, top, 523, 700), paragraph, fontname="helv", fontsize=11)
    data = doc.tobytes()
    doc.close()
    return data


def test_the_sources_list_and_the_panel_name_the_page_of_the_cited_chunk(
    qtbot: QtBot, qloop, db_path, config, notifications, tmp_path
):
    path = tmp_path / "method.pdf"
    path.write_bytes(_three_page_section())

    async def cite() -> Citation:
        async with HaikuRAG(db_path, config, create=True) as client:
            outcome = await client.ingest_file(path)
            assert outcome.status == "ingested"
            hits = await client.search("acceptance threshold", limit=1, search_type="fts")
            assert hits[0].page_numbers == [2]
            [widened] = await client.expand_context(hits[:1])
            assert widened.page_numbers == [1, 2, 3], "the widened section spans three pages"
            return Citation.from_result(1, hits[0].chunk_id, widened)

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        citation = pool.submit(asyncio.run, cite()).result()

    turn = Turn(question="What was tuned?", answer="The acceptance threshold [1].",
                citations=[citation], grounding="grounded")
    widget = TurnWidget(turn)
    qtbot.addWidget(widget)
    widget.show()
    [label] = widget.source_cards
    assert "2 Method — p. 2" in label.text() and "pp. 1–3" not in label.text()
    assert widget.chips[0].toolTip().endswith("2 Method — p. 2")

    from haiku_desk.services.library import LibraryService
    from haiku_desk.services.pages import PagesService
    from haiku_desk.views.citation_panel import CitationPanel

    library = LibraryService(db_path, config, notifications)
    opened: list[bool] = []
    library.opened.connect(lambda: opened.append(True))
    library.start()
    run_until(qloop, lambda: bool(opened), timeout=120)
    pages = PagesService(library, notifications)
    panel = CitationPanel(pages)
    panel.open_in_system_viewer = False
    qtbot.addWidget(panel)
    panel.resize(900, 700)
    panel.show()
    try:
        panel.show_citation(citation)
        assert panel.title.toolTip().endswith(" — p. 2")
        assert panel.cited == [1, 2, 3], "the panel still pages through the widened context"
    finally:
        pages.close()
        qloop.run_until_complete(library.aclose())
