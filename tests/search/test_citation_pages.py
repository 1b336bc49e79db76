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
