"""Which pages a citation names, shows and opens on: decided once, in ``haiku.rag.citations``
(the citation panel, the pages the main window prefetches and the export all ask there)."""

from __future__ import annotations

from haiku.rag.citations import Box, Citation, cited_pages, matched_pages, opening_page


def citation(boxes=(), context=(), pages=()) -> Citation:
    return Citation(
        index=1,
        chunk_id="c",
        document_id="d",
        document_uri="file:///r.pdf",
        content="text",
        page_numbers=list(pages),
        boxes=[Box(p, 1, 2, 3, 4) for p in boxes],
        context_boxes=[Box(p, 1, 2, 3, 4) for p in context],
    )


def test_a_citation_opens_on_its_own_text_not_the_context_before_it():
    cited = citation(boxes=[3, 2], context=[1, 4], pages=[1, 2, 3, 4])
    assert opening_page(cited) == 2
    assert cited_pages(cited) == [1, 2, 3, 4]
    assert matched_pages(cited) == [2, 3]


def test_without_boxes_of_its_own_it_opens_on_the_first_page_it_shows():
    assert opening_page(citation(context=[5, 4], pages=[9])) == 4
    assert opening_page(citation(pages=[7, 6])) == 6
    assert matched_pages(citation(context=[5], pages=[7, 6])) == [6, 7]
    assert opening_page(citation()) == 1 and cited_pages(citation()) == [1]


# --- the pages as printed (DEFECTS 20:02: a book cited "pp. 36–37", its pages print 22, 23) ---


def test_pages_are_named_as_printed_when_the_citation_knows_their_labels():
    from haiku.rag.citations import page_place, pages_label

    labels = {36: "22", 37: "23", 12: "xiii", 13: "xiv", 30: ""}
    assert pages_label([36, 37], labels) == "pp. 22–23"
    assert pages_label([37], labels) == "p. 23"
    assert pages_label([12, 13], labels) == "pp. xiii–xiv"
    assert pages_label([36, 38], {36: "22", 38: "24"}) == "pp. 22, 24"
    # a page whose printed label is not known is named by the PDF's numbering, said so
    assert pages_label([29, 30], labels) == "PDF pp. 29–30"
    # without labels: sheets, pages in a row as a range
    assert pages_label([2, 3]) == "pp. 2–3" and pages_label([3, 5]) == "pp. 3, 5"
    assert pages_label([1, 2, 3, 5]) == "pp. 1–3, 5" and pages_label([]) == ""
    assert page_place(36, labels) == "p. 22 (PDF 36)"
    assert page_place(30, labels) == "PDF p. 30" and page_place(5, labels) == "p. 5"


def test_a_citation_carries_the_printed_labels_of_its_own_pages_only():
    from haiku.rag.citations import pages_label
    from haiku.rag.store.models import SearchResult

    meta = {"page_labels": {str(s): str(s - 14) for s in range(17, 352)} | {"30": ""}}
    result = SearchResult(
        chunk_id="c", content="text", score=1.0, document_id="d", document_uri="file:///b.pdf",
        page_numbers=[36, 37], boxes=[Box(36, 1, 2, 3, 4), Box(37, 1, 2, 3, 4)],
        context_boxes=[Box(38, 1, 2, 3, 4)], document_meta=meta,
    )
    cited = Citation.from_result(1, "c", result)
    assert cited.page_labels == {36: "22", 37: "23", 38: "24"}
    assert pages_label(matched_pages(cited), cited.page_labels) == "pp. 22–23"
    # a conversation saved to JSON and read back keeps them
    assert Citation.model_validate_json(cited.model_dump_json()).page_labels == cited.page_labels
    # a document without labels (every store made before them): nothing changes
    plain = Citation.from_result(1, "c", result.model_copy(update={"document_meta": {}}))
    assert plain.page_labels == {} and pages_label(matched_pages(plain), plain.page_labels) == "pp. 36–37"


def test_author_year_citations_name_the_printed_pages():
    from haiku.rag.bibliography import Bibliographic, Creator, author_year_citation

    record = Bibliographic(creators=[Creator(given="Lawrence", family="Lessig")], year=2004)
    assert author_year_citation(record, [36, 37], labels={36: "22", 37: "23"}) == "(Lessig, 2004, pp. 22–23)"
    meta = {"bibliographic": record.to_metadata(), "page_labels": {"36": "22", "37": "23"}}
    assert author_year_citation(meta, [36, 37]) == "(Lessig, 2004, pp. 22–23)"
    assert author_year_citation(record, [36, 37]) == "(Lessig, 2004, pp. 36–37)"


async def test_an_ingested_book_is_cited_by_its_printed_pages(tmp_path, db_path, config):
    """Real ingest, store and search: the hit on sheet 8 of a book printing "23" there."""
    import pdf_factory

    from haiku.rag.bibliography import author_year_citation
    from haiku.rag.citations import pages_label
    from haiku.rag.client import HaikuRAG

    path = tmp_path / "quokkas.pdf"
    pdf_factory.make_folio_pdf(path, pdf_factory.folio_book())
    async with HaikuRAG(db_path, config, create=True) as client:
        document = (await client.ingest_file(path, embed=False)).document
        assert document.metadata["page_labels"] == {str(s): label for s, label in pdf_factory.BOOK_LABELS.items()}
        [hit] = await client.search("marker8word", search_type="fts", limit=1)
        assert hit.page_numbers == [8]
        cited = Citation.from_result(1, hit.chunk_id, hit)
        assert cited.page_labels == {8: "23"}
        assert pages_label(matched_pages(cited), cited.page_labels) == "p. 23"
        assert author_year_citation(hit.document_meta, [7, 8]).endswith("pp. 22–23)")


def test_the_search_command_names_the_printed_pages(tmp_path, capsys):
    import json

    import pdf_factory

    from haiku.rag.cli import main

    path = tmp_path / "quokkas.pdf"
    pdf_factory.make_folio_pdf(path, pdf_factory.folio_book())
    db = str(tmp_path / "lib.lancedb")
    assert main(["--db", db, "add-src", str(path)]) == 0
    capsys.readouterr()
    assert main(["--db", db, "search", "marker8word", "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert "  p. 23  [score" in out and "p. 8 " not in out
    assert main(["--db", db, "search", "marker8word", "--limit", "1", "--json"]) == 0
    [hit] = json.loads(capsys.readouterr().out)
    assert hit["page_numbers"] == [8] and hit["page_labels"] == {"8": "23"}
