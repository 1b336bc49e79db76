"""Issue 34, the library pane's second hour: the filter reads file names, authors and years;
Delete deletes; the confirmation opens in one place; the Document column keeps its width; the
collections and watched folders sit in a splitter that keeps its size."""

from __future__ import annotations

from qt_helpers import run_until

from haiku_desk.models.documents import ENTRY_ROLE, NAME
from haiku_desk.services.library import uri_for
from haiku_desk.views.library_pane import LibraryPane

SLOW = 180


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


def _pane(qtbot, library, width=420, height=520, **kwargs):
    pane = LibraryPane(library, **kwargs)
    qtbot.addWidget(pane)
    pane.resize(width, height)
    pane.show()
    qtbot.waitExposed(pane)
    return pane


def _ingest(qloop, library, files):
    library.add_paths(files)
    run_until(qloop, lambda: all((e := library.entry(uri_for(f))) is not None and e.searchable for f in files), SLOW)


def _shown_keys(pane) -> list[str]:
    return [pane.proxy.index(r, NAME).data(ENTRY_ROLE).key for r in range(pane.proxy.rowCount())]


def test_the_filter_matches_title_file_name_authors_and_year(qloop, qtbot, library, tmp_path):
    from haiku.rag.bibliography import edited_record

    report = _titled_pdf(tmp_path / "report-619.pdf", "Groundwater Recharge in Karst", "Karst aquifers recharge.")
    paper = _titled_pdf(tmp_path / "paper.pdf", "Attention Is All You Need", "Transformers attend.")
    pane = _pane(qtbot, library)
    _ingest(qloop, library, [report, paper])
    paper_id = library.entry(uri_for(paper)).document_id
    record = edited_record(None, title=None, authors="Vaswani, Ashish\nShazeer, Noam", year="2017", venue=None, doi=None)
    client = library.client
    qloop.run_until_complete(client.update_bibliographic(paper_id, record))
    qloop.run_until_complete(library.refresh())

    def shown(text: str) -> list[str]:
        pane.search.setText(text)
        return _shown_keys(pane)

    assert shown("619") == [uri_for(report)]  # the file name shown under the title
    assert shown("karst") == [uri_for(report)]  # the title
    assert shown("shazeer") == [uri_for(paper)]  # an author
    assert shown("2017") == [uri_for(paper)]  # the year
    assert shown("vaswani 2017") == [uri_for(paper)]  # every word, in any field
    assert shown("vaswani karst") == []
    assert shown("") == [uri_for(report), uri_for(paper)]
