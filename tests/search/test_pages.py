"""Page-level aggregation: a page's chunks are scored together and each page comes back once;
unpaged chunks and the default (off) rank exactly as before."""

from __future__ import annotations

import numpy as np
import pytest
from search.paged import paged_document

from haiku.rag.search.hybrid import SearchSettings, search_chunks
from haiku.rag.search.pages import Candidate, aggregate_pages, page_companions
from haiku.rag.store import documents as D
from haiku.rag.store.engine import Store

# page 1: one chunk that matches "quokka" strongly; page 2: four that each match it a little;
# page 3: a chunk full text cannot find (only its vector can)
PAGES = [
    (1, "quokka quokka quokka quokka census of the island colonies"),
    (2, "a quokka was seen near the ferry terminal at dawn"),
    (2, "the ranger counted one quokka beside the lighthouse path"),
    (2, "visitors photographed a quokka under the bakery awning"),
    (2, "rain kept the quokka in the scrub behind the campsite"),
    (3, "wallaby tracks crossed the salt lake after the storm"),
]


def _store(db_path) -> tuple[Store, list[str], np.ndarray]:
    store = Store(str(db_path), create=True)
    store.ensure_vector_table("local", "test-model", 8)
    [(document, chunk_ids)] = D.write_documents(store, [paged_document("file:///tmp/field-notes.pdf", PAGES)])
    vectors = np.random.default_rng(3).standard_normal((len(chunk_ids), 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    D.add_vectors(store, [document] * len(chunk_ids), chunk_ids, vectors)
    D.mark_hybrid(store, [document])
    return store, chunk_ids, vectors[5]  # the query vector: page 3's chunk


def _pages(results) -> list[int]:
    return [r.page_numbers[0] for r in results]


def test_off_by_default_a_chunk_search_repeats_pages(db_path):
    store, ids, _ = _store(db_path)
    results = search_chunks(store, "quokka", query_vector=None, search_type="fts", limit=4)
    assert _pages(results)[0] == 1 and _pages(results).count(2) == 3


def test_share_zero_returns_each_page_once_by_its_best_chunk(db_path):
    store, ids, _ = _store(db_path)
    chunks = search_chunks(store, "quokka", query_vector=None, search_type="fts", limit=5)
    pages = search_chunks(store, "quokka", query_vector=None, search_type="fts", limit=5, settings=SearchSettings(page_share=0.0))
    assert _pages(pages) == [1, 2]
    # each page is its best chunk, with that chunk's own score
    assert [(r.chunk_id, r.score) for r in pages] == [(r.chunk_id, r.score) for r in chunks[:2]]


def test_a_page_of_several_matching_chunks_can_outrank_one_strong_chunk(db_path):
    store, ids, _ = _store(db_path)
    chunks = search_chunks(store, "quokka", query_vector=None, search_type="fts", limit=5)
    page_two = sorted((r.score for r in chunks if r.page_numbers == [2]), reverse=True)
    assert chunks[0].page_numbers == [1] and sum(page_two) > chunks[0].score, "precondition"
    pages = search_chunks(store, "quokka", query_vector=None, search_type="fts", limit=5, settings=SearchSettings(page_share=1.0))
    assert _pages(pages) == [2, 1]
    assert pages[0].score == pytest.approx(sum(page_two))
    assert pages[0].chunk_id == next(r.chunk_id for r in chunks if r.page_numbers == [2])


def test_hybrid_pages_include_vector_only_hits(db_path):
    store, ids, query = _store(db_path)
    results = search_chunks(store, "quokka", query_vector=query, limit=3, settings=SearchSettings(fusion="score", page_share=0.5))
    assert sorted(_pages(results)) == [1, 2, 3]  # page 3 is found by its vector alone
    assert ids[5] in {r.chunk_id for r in results}


def test_the_client_groups_pages_when_configured(db_path, config):
    from haiku.rag.client import HaikuRAG

    store, _, _ = _store(db_path)
    store.close()
    config.search.page_share = 0.0
    client = HaikuRAG(db_path, config, skip_validation=True)
    try:
        assert _pages(client.search_sync("quokka", 3, "fts")) == [1, 2]
        config.search.page_share = None
        assert _pages(client.search_sync("quokka", 3, "fts")) == [1, 2, 2]
    finally:
        client.close()


def test_one_page_filling_the_pools_does_not_leave_fewer_pages_than_asked(db_path):
    """A one-page report's 30 table-row chunks all match better than anything else: the
    first pools (20 a side) hold only that page, and one result per page gave one result for
    limit 5 (a tester's search-only answer listed a single passage). The search looks deeper
    until it has the pages asked for."""
    store = Store(str(db_path), create=True)
    rows = [(1, f"background checks state {i} background checks permits {i}") for i in range(30)]
    others = [(page, f"state background checks were discussed on page {page}") for page in range(1, 5)]
    D.write_documents(
        store, [paged_document("file:///tmp/report.pdf", rows), paged_document("file:///tmp/book.pdf", others)]
    )
    grouped = SearchSettings(page_share=0.0)
    results = search_chunks(store, "background checks", query_vector=None, search_type="fts", limit=5, settings=grouped)
    assert len(results) == 5
    assert [r.document_uri for r in results].count("file:///tmp/report.pdf") == 1
    # and a search that finds only what there is stops (two pages in all)
    few = search_chunks(store, "permits", query_vector=None, search_type="fts", limit=5, settings=grouped)
    assert _pages(few) == [1]


def test_aggregation_scores_pages_and_leaves_unpaged_chunks_alone():
    candidates = [
        Candidate("a", 0.9, "d1", [4]),
        Candidate("b", 0.8, "d1", [7]),
        Candidate("c", 0.7, "d1", [7, 8]),  # starts on page 7: read there
        Candidate("x", 0.6, "d2", []),
        Candidate("y", 0.6, "d2", []),  # unpaged: each chunk is its own group
        Candidate("e", -0.2, "d1", [4]),  # a negative score never pulls its page down
    ]
    assert aggregate_pages(candidates, 0.0) == [("a", 0.9), ("b", 0.8), ("x", 0.6), ("y", 0.6)]
    assert aggregate_pages(candidates, 0.5) == [("b", pytest.approx(1.15)), ("a", 0.9), ("x", 0.6), ("y", 0.6)]
    # the third chunk of a page counts share², not share
    three = [Candidate("p", 1.0, "d", [1]), Candidate("q", 1.0, "d", [1]), Candidate("r", 1.0, "d", [1])]
    assert aggregate_pages(three, 0.5) == [("p", pytest.approx(1.75))]
    with pytest.raises(ValueError, match="page share"):
        aggregate_pages(candidates, 1.5)


def test_a_page_result_carries_the_page_s_chunks_that_scored_nearly_as_well(db_path):
    """A tester asked for Florida's total on a one-page table report: one result per page kept
    the Totals row (2.18) and dropped Florida's (2.13), and the model read the national total
    as Florida's. The page's close runners-up join its result, each citable by its own id;
    the pages and their order do not change."""
    store = Store(str(db_path), create=True)
    rows = [
        (1, "State table: Alabama 26,001 checks"),
        (1, "State table: Florida 103,532 checks"),
        (1, "State table: Texas 98,233 checks"),
        (1, "State table: Totals 2,236,457 checks"),
    ]
    D.write_documents(
        store,
        [paged_document("file:///tmp/report.pdf", rows), paged_document("file:///tmp/book.pdf", [(2, "a page of checks")])],
    )
    plain = SearchSettings(page_share=0.0)
    close = SearchSettings(page_share=0.0, page_companion_ratio=0.9)
    query = "Florida Totals checks"
    alone = search_chunks(store, query, query_vector=None, search_type="fts", limit=5, settings=plain)
    joined = search_chunks(store, query, query_vector=None, search_type="fts", limit=5, settings=close)
    assert [(r.chunk_id, r.score, r.document_uri) for r in joined] == [(r.chunk_id, r.score, r.document_uri) for r in alone]
    first = joined[0]
    assert len(alone[0].chunk_ids) == 1 and len(first.chunk_ids) == 2
    # both rows the query names, in reading order, each with its own text and boxes; not the
    # rows that only share "checks"
    assert first.content.index("Florida") < first.content.index("Totals")
    assert "Texas" not in first.content and "Alabama" not in first.content
    assert set(first.chunk_texts) == set(first.chunk_ids) == set(first.chunk_boxes)
    assert all(text in first.content for text in first.chunk_texts.values())


def test_page_companions_are_close_same_page_chunks_of_kept_pages_only():
    candidates = [
        Candidate("a", 1.0, "d1", [4]),
        Candidate("b", 0.95, "d1", [4]),
        Candidate("c", 0.92, "d1", [4]),
        Candidate("d", 0.91, "d1", [4]),  # a third runner-up: beyond ``most``
        Candidate("e", 0.5, "d1", [4]),  # not close
        Candidate("f", 0.9, "d1", [5]),  # another page
        Candidate("g", 0.89, "d1", [5]),
        Candidate("x", 0.8, "d2", []),  # unpaged: never companions
        Candidate("y", 0.8, "d2", []),
    ]
    assert page_companions(candidates, ["a", "f", "x"], 0.9, 2) == {"a": ["b", "c"], "f": ["g"]}
    assert page_companions(candidates, ["f"], 0.9, 2) == {"f": ["g"]}  # page 4 not kept
    assert page_companions(candidates, ["a"], 0.99, 2) == {}
