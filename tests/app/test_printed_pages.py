"""A book's citations name its pages as printed (DEFECTS 20:02: "Lessig, 2004, pp. 36–37" for
pages printing 22 and 23): the sources list, the chip, "Copy citation" and the Markdown export
say "pp. 22–23"; the reader keeps paging by the PDF's sheets and shows both ("p. 22 (PDF 36)").
A real PDF printing running numbers offset from its sheets, ingested into real LanceDB,
searched by the library; real widgets offscreen."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pdf_factory
import pytest
from qt_helpers import run_until

from haiku.rag.bibliography import Bibliographic, Creator
from haiku.rag.citations import Box, Citation
from haiku.rag.client import HaikuRAG
from haiku_desk.citations import citation_location, quoted_citation, source_label
from haiku_desk.export import export_answer
from haiku_desk.services.conversations import Turn
from haiku_desk.services.library import uri_for
from haiku_desk.services.pages import PagesService
from haiku_desk.views.chat_pane import TurnWidget, passages_markdown
from haiku_desk.views.citation_panel import CitationPanel

SLOW = 180
LESSIG = Bibliographic(creators=[Creator(given="Ada", family="Finch")], year=2004)


def _cite(db_path, config, path, query: str) -> Citation:
    """The citation the library makes of ``query``'s hit in the book at ``path``."""

    async def cite() -> Citation:
        async with HaikuRAG(db_path, config, create=True) as client:
            await client.ingest_file(path, embed=False)
            [hit] = await client.search(query, limit=1, search_type="fts")
            return Citation.from_result(1, hit.chunk_id, hit)

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, cite()).result()


@pytest.fixture
def book(tmp_path):
    path = tmp_path / "quokkas.pdf"
    pdf_factory.make_folio_pdf(path, pdf_factory.folio_book())
    return path


def test_the_sources_list_chip_and_copied_citation_name_the_printed_page(qtbot, db_path, config, book):
    citation = _cite(db_path, config, book, "marker8word")
    assert citation.page_numbers == [8] and citation.page_labels == {8: "23"}
    assert citation_location(citation).endswith("p. 23")
    assert source_label(citation, LESSIG) == "Finch, 2004, p. 23"
    assert quoted_citation(citation, LESSIG).endswith("(Finch, 2004, p. 23)")
    assert quoted_citation(citation, None).endswith(", p. 23)")
    # two pages in a row, as printed
    both = citation.model_copy(update={"boxes": [Box(7, 72, 100, 300, 120), *citation.boxes], "page_labels": {7: "22", 8: "23"}})
    assert source_label(both, LESSIG) == "Finch, 2004, pp. 22–23"

    turn = Turn(question="Where?", answer="On the island [1].", citations=[citation], grounding="grounded")
    widget = TurnWidget(turn)
    qtbot.addWidget(widget)
    widget.show()
    [card] = widget.source_cards
    assert "p. 23" in card.text() and "p. 8" not in card.text()
    assert widget.chips[0].toolTip().endswith("p. 23")
    assert "quokkas — p. 23" in passages_markdown(turn).lower()


@pytest.fixture
def pages(library, notifications):
    service = PagesService(library, notifications)
    yield service
    service.close()


def test_the_reader_pages_by_sheet_and_shows_the_printed_page(qloop, qtbot, library, pages, book):
    library.add_paths([book])
    run_until(qloop, lambda: (e := library.entry(uri_for(book))) is not None and (e.searchable or e.reason), SLOW)
    entry = library.entry(uri_for(book))
    assert entry.searchable, entry.reason
    panel = CitationPanel(pages)
    qtbot.addWidget(panel)
    panel.resize(620, 720)
    panel.show()
    qtbot.waitExposed(panel)
    shown: list[int] = []
    panel.page_shown.connect(shown.append)
    citation = Citation(
        index=1, chunk_id="c1", document_id=entry.document_id, document_uri=entry.key,
        document_title=entry.name, content="passage", page_numbers=[8],
        boxes=[Box(8, 72, 110, 300, 130)], page_labels={8: "23"},
    )  # fmt: skip
    panel.show_citation(citation)
    run_until(qloop, lambda: bool(shown))
    assert panel.page == 8  # the reader opens the PDF's sheet 8 ...
    assert panel.title.suffix == " — p. 23 (PDF 8)"
    assert panel.page_label.text() == "p. 23 (PDF 8/12) · cited"
    panel.resize(330, 720)  # a narrow panel: the printed page keeps its place, the words go
    run_until(qloop, lambda: panel.page_label.text() == "p. 23 (8/12) •")
    assert panel.nav.sizeHint().width() <= panel.nav.width()
    panel.resize(620, 720)
    run_until(qloop, lambda: panel.page_label.text() == "p. 23 (PDF 8/12) · cited")
    panel.next_button.click()  # ... pages by sheet, and names every page it knows as printed
    run_until(qloop, lambda: panel.page == 9)
    assert panel.page_label.text() == "p. 24 (PDF 9/12)"
    panel.prev_button.click()
    panel.prev_button.click()
    panel.prev_button.click()
    run_until(qloop, lambda: panel.page == 6)
    assert panel.page_label.text() == "p. 6/12"  # a chapter opening outside every run: no label claimed


async def test_the_export_names_the_printed_page(tmp_path, db_path, config, book):
    async with HaikuRAG(db_path, config, create=True) as client:
        await client.ingest_file(book, embed=False)
        [hit] = await client.search("marker8word", limit=1, search_type="fts")
        citation = Citation.from_result(1, hit.chunk_id, hit)
        turn = Turn(question="Where?", answer="On the island [1].", citations=[citation], grounding="grounded")
        text = (await export_answer(turn, client, tmp_path / "out")).read_text()
    sources = text.split("### Sources")[1]
    assert "— p. 23**" in sources and "p. 8" not in sources
    assert "![Source 1, page 23 (PDF 8)](" in sources
