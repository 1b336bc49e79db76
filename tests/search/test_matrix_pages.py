"""Page grouping from the exact-search matrix: each vector carries its chunk's first page, so
grouping needs no chunk-row query, and ranks exactly as reading every pooled row did (chunks
without pages, chunks spanning pages, appended documents, and beyond the exact-search budget,
where the vector hits come from LanceDB and their rows are read as before)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from haiku.rag.ingest.records import Box, ChunkRecord, ItemRecord, NewDocument
from haiku.rag.search import hybrid
from haiku.rag.search.hybrid import SearchSettings, search_chunks
from haiku.rag.store import documents as D
from haiku.rag.store import schema as S
from haiku.rag.store.engine import Store
from haiku.rag.store.vectors import NO_PAGE, PAGE_UNKNOWN

WORDS = "quokka wallaby ferry lighthouse bakery campsite salt lake storm census island dawn".split()
DIM = 16


def _document(n: int, rng: np.random.Generator, paged: bool) -> NewDocument:
    """24 chunks on 6 pages (some spanning two, listed high page first), or none paged."""
    items, chunks = [], []
    for i in range(24):
        text = " ".join(rng.choice(WORDS, size=6))
        page = 1 + i // 4
        pages = ([page + 1, page] if i % 5 == 0 else [page]) if paged else []
        boxes = [Box(p, 72, 100, 500, 114) for p in pages]
        items.append(ItemRecord(i, f"#/texts/{i}", "text", text, pages, 0, boxes))
        chunks.append(ChunkRecord(i, text, text, [], ["text"], [f"#/texts/{i}"], pages, boxes))
    return NewDocument(
        uri=f"file:///tmp/doc-{n}.pdf", title=None, metadata={}, content_hash=f"h{n}",
        mime_type="application/pdf", page_count=7 if paged else 0, source_bytes=b"%PDF-fake",
        content="", docling_json="{}", items=items, chunks=chunks,
    )  # fmt: skip


def _write(store: Store, rng: np.random.Generator, start: int, count: int) -> None:
    store.ensure_vector_table("local", "test-model", DIM)
    news = [_document(n, rng, paged=n % 3 != 2) for n in range(start, start + count)]
    for document, chunk_ids in D.write_documents(store, news):
        vectors = rng.standard_normal((len(chunk_ids), DIM)).astype(np.float32)
        D.add_vectors(store, [document] * len(chunk_ids), chunk_ids, vectors)
        D.mark_hybrid(store, [document])


def _searches(store: Store, queries: np.ndarray) -> list[list[tuple[str, float, list[int]]]]:
    found = []
    for i, vector in enumerate(queries):
        for share in (0.0, 0.5):
            for search_type in ("hybrid", "vector"):
                results = search_chunks(
                    store, WORDS[i % len(WORDS)], query_vector=vector, search_type=search_type,
                    limit=5, settings=SearchSettings(page_share=share, fusion="score" if i % 2 else "rrf"),
                )  # fmt: skip
                found.append([(r.chunk_id, r.score, r.page_numbers) for r in results])
    return found


@pytest.fixture
def fetched(monkeypatch) -> list[str]:
    """The chunk ids each search reads rows for (full-text hits carry only their ranking
    columns, so those among the results are read too)."""
    ids: list[str] = []
    real = hybrid._fetch_rows

    def recording(store, rows, chunk_ids, current, row_of=None, *, complete=False):
        ids.extend(cid for cid in chunk_ids if cid not in rows or (complete and "content" not in rows[cid]))
        real(store, rows, chunk_ids, current, row_of, complete=complete)

    monkeypatch.setattr(hybrid, "_fetch_rows", recording)
    return ids


def test_the_matrix_holds_each_chunks_lowest_page_or_none(db_path):
    store = Store(str(db_path), create=True)
    _write(store, np.random.default_rng(1), 0, 6)
    matrix = store.vector_matrix()
    rows = store.table(S.CHUNKS).search().select(["id", "page_numbers"]).limit(None).to_list()
    expected = {r["id"]: min(r["page_numbers"]) if r["page_numbers"] else NO_PAGE for r in rows}
    assert dict(zip(matrix.chunk_ids, matrix.first_pages.tolist(), strict=True)) == expected
    assert NO_PAGE in matrix.first_pages and matrix.first_pages.dtype == np.int32
    # counted in the matrix's memory: the vectors plus two int32 columns and the int64 row ids
    assert matrix.nbytes == matrix.vectors.nbytes + 16 * len(matrix)


def test_grouping_from_the_matrix_ranks_as_reading_every_row_and_reads_only_the_results(
    db_path, fetched, monkeypatch
):
    store = Store(str(db_path), create=True)
    rng = np.random.default_rng(2)
    _write(store, rng, 0, 9)
    queries = rng.standard_normal((8, DIM)).astype(np.float32)
    fast = _searches(store, queries)
    results = {cid for found in fast for cid, _, _ in found}
    assert fetched and set(fetched) <= results  # rows read only for what is returned

    # the reference: a matrix that knows no pages, so every pooled vector hit's row is read
    matrix = store.vector_matrix()
    blind = dataclasses.replace(
        matrix, first_pages=np.full(len(matrix), PAGE_UNKNOWN, dtype=np.int32)
    )
    monkeypatch.setattr(store, "vector_matrix", lambda: blind)
    fetched.clear()
    slow = _searches(store, queries)
    assert not set(fetched) <= results  # the row-fetch path did read the pool
    assert fast == slow
    assert any(pages == [] for found in fast for _, _, pages in found)  # unpaged chunks took part
    assert any(len(pages) == 2 for found in fast for _, _, pages in found)  # and spanning ones


def test_appended_documents_get_their_pages_without_a_reload(db_path):
    from haiku.rag.store.vectors import VectorMatrix

    store = Store(str(db_path), create=True)
    rng = np.random.default_rng(3)
    _write(store, rng, 0, 3)
    first = store.vector_matrix()
    _write(store, rng, 3, 3)  # appends, as ingestion writes them
    grown = store.vector_matrix()
    assert len(grown) == 2 * len(first) and grown.chunk_ids[0] == first.chunk_ids[0]
    fresh = VectorMatrix.load(store.table(S.CHUNK_VECTORS), store.table(S.CHUNKS))
    assert dict(zip(grown.chunk_ids, grown.first_pages.tolist(), strict=True)) == dict(
        zip(fresh.chunk_ids, fresh.first_pages.tolist(), strict=True)
    )
    assert PAGE_UNKNOWN not in grown.first_pages


def test_a_vector_whose_chunk_row_is_missing_is_read_like_before(db_path):
    store = Store(str(db_path), create=True)
    _write(store, np.random.default_rng(4), 0, 2)
    table = store.table(S.CHUNK_VECTORS)
    from haiku.rag.store.vectors import VectorMatrix

    without_chunks = VectorMatrix.load(table)  # no chunks table given: pages unknown
    assert (without_chunks.first_pages == PAGE_UNKNOWN).all()
    hits = without_chunks.nearest(np.ones(DIM, dtype=np.float32), 5, None)
    assert hits and all("first_page" not in h for h in hits)


def _assert_same_results(found, exact) -> None:
    """Same chunks on the same pages in the same order, scores equal to float32 precision
    (LanceDB's cosine vs ours)."""
    assert [[(c, p) for c, _, p in f] for f in found] == [[(c, p) for c, _, p in f] for f in exact]
    for ours, theirs in zip(found, exact, strict=True):
        assert np.allclose([s for _, s, _ in ours], [s for _, s, _ in theirs], atol=1e-5)


def _exact_then_beyond(db_path, seed: int, prepare=None):
    """A store of 9 documents with random vectors, six queries, their results on the exact
    path, and the same store reopened beyond the exact-search budget (no matrix)."""
    store = Store(str(db_path), create=True)
    rng = np.random.default_rng(seed)
    _write(store, rng, 0, 9)
    if prepare is not None:
        prepare(store)
    queries = rng.standard_normal((6, DIM)).astype(np.float32)
    exact = _searches(store, queries)
    store.close()
    return queries, exact, Store(str(db_path), exact_search_budget_bytes=0)


def test_beyond_the_budget_grouped_results_equal_the_exact_paths(db_path, tmp_path):
    """With no matrix (budget 0), vector hits come from LanceDB (a flat scan at this size, so
    exact) without pages: their rows are read, and the ranking is the matrix path's."""
    queries, exact, beyond = _exact_then_beyond(db_path, 5)
    assert beyond.vector_matrix() is None
    found = _searches(beyond, queries)
    _assert_same_results(found, exact)


def test_grouped_hybrid_searches_through_the_ann_index_find_what_exact_search_finds(
    db_path, monkeypatch
):
    """Beyond the budget with the ANN index: a hybrid pool of 40 with refine factor 2 asks HNSW
    for 80 candidates, more than its default ef of 64 (LanceDB refused such queries); grouped
    results match the exact path's within the stated recall."""
    from haiku.rag.store import engine

    monkeypatch.setattr(engine, "VECTOR_INDEX_MIN_ROWS", 200)

    def index(store: Store) -> None:  # 216 vectors
        store.maintain_indexes(force=True)
        assert engine.VECTOR_INDEX_NAME in [
            i.name for i in store.table(S.CHUNK_VECTORS).list_indices()
        ]

    queries, exact, beyond = _exact_then_beyond(db_path, 6, index)
    assert beyond.vector_matrix() is None
    found = _searches(beyond, queries)  # limit 5: pools of 20 (k 40); then limit 10 below
    both = sum(
        len({c for c, _, _ in a} & {c for c, _, _ in b}) for a, b in zip(found, exact, strict=True)
    )
    assert both / sum(len(e) for e in exact) >= 0.95
    for vector in queries:
        results = search_chunks(beyond, "quokka", query_vector=vector, limit=10, settings=SearchSettings(page_share=0.0))
        keys = [
            (r.document_id, min(r.page_numbers)) if r.page_numbers else r.chunk_id for r in results
        ]
        assert len(results) == 10 and len(set(keys)) == 10  # each page once


def test_beyond_the_budget_the_page_map_gives_ann_hits_their_pages_and_ranks_as_reading_rows(
    db_path, fetched
):
    """Beyond the budget the store reads each chunk's first page by id once (in the background,
    ``Store.prewarm``): vector hits from LanceDB carry their pages, grouping reads rows only for
    the results, and results equal the exact path's. Chunks written after the map was read are
    not in it: their rows are read, as before, and results stay equal."""
    from haiku.rag.store.vectors import PageMap

    queries, exact, beyond = _exact_then_beyond(db_path, 7)
    assert beyond.vector_matrix() is None and beyond.page_map() is None  # nothing until asked
    assert beyond.prewarm() is True and beyond.wait_warm(60)
    pages = beyond.page_map()
    assert isinstance(pages, PageMap)
    rows = beyond.table(S.CHUNKS).search().select(["id", "page_numbers"]).limit(None).to_list()
    assert pages.first_pages([r["id"] for r in rows]) == [
        min(r["page_numbers"]) if r["page_numbers"] else NO_PAGE for r in rows
    ]
    assert pages.first_pages(["no-such-chunk", "x" * 200, ""]) == [PAGE_UNKNOWN] * 3
    fetched.clear()
    found = _searches(beyond, queries)
    _assert_same_results(found, exact)
    assert set(fetched) <= {cid for f in found for cid, _, _ in f}  # rows read only for the results

    _write(beyond, np.random.default_rng(8), 9, 3)  # after the map was read: not in it
    assert beyond.page_map() is pages
    more = np.random.default_rng(9).standard_normal((4, DIM)).astype(np.float32)
    late = _searches(beyond, more)
    beyond.close()
    within = Store(str(db_path))
    _assert_same_results(late, _searches(within, more))


def test_hit_rows_are_read_by_the_row_ids_the_matrix_holds(db_path, monkeypatch):
    store = Store(str(db_path), create=True)
    _write(store, np.random.default_rng(4), 0, 4)
    matrix = store.vector_matrix()
    table = store.table(S.CHUNKS)
    truth = table.search().select(["id"]).with_row_id(True).limit(None).to_list()
    assert dict(zip(matrix.chunk_ids, matrix.chunk_rows.tolist(), strict=True)) == {
        r["id"]: r["_rowid"] for r in truth
    }
    hits = matrix.nearest(np.ones(DIM, dtype=np.float32), 5, None)
    assert all("chunk_row" in h for h in hits)

    # the ids given are read by row id only: the lookup by id is never needed for them
    looked_up: list[set[str]] = []
    real_where = type(table.search()).where

    def where(self, clause, *args, **kwargs):
        looked_up.append(clause)
        return real_where(self, clause, *args, **kwargs)

    monkeypatch.setattr(type(table.search()), "where", where)
    rows: dict = {}
    wanted = [h["chunk_id"] for h in hits]
    hybrid._fetch_rows(store, rows, wanted, lambda r: True, {h["chunk_id"]: h["chunk_row"] for h in hits})
    assert sorted(rows) == sorted(wanted) and not looked_up
    assert all(rows[cid]["id"] == cid for cid in wanted)


def test_row_ids_that_name_other_rows_fall_back_to_the_id_lookup(db_path):
    """A table without stable row ids moves its rows when it compacts, so a row id the matrix
    kept may name another chunk, or none: the rows returned are still the chunks asked for."""
    store = Store(str(db_path), create=True)
    _write(store, np.random.default_rng(5), 0, 3)
    table = store.table(S.CHUNKS)
    everything = table.search().select(["id"]).with_row_id(True).limit(None).to_list()
    wanted = [r["id"] for r in everything[:4]]
    # each wanted chunk given the row id of another (some outside the wanted set) or of nothing
    wrong = {cid: everything[-1 - i]["_rowid"] for i, cid in enumerate(wanted[:3])}
    wrong[wanted[3]] = 10**12
    rows: dict = {}
    hybrid._fetch_rows(store, rows, wanted, lambda r: True, wrong)
    assert sorted(rows) == sorted(wanted)
    assert all(rows[cid]["id"] == cid for cid in wanted)
    # a row read by row id that is not current is left out, as the id lookup leaves it out
    rows = {}
    right = {r["id"]: r["_rowid"] for r in everything[:4]}
    hybrid._fetch_rows(store, rows, wanted, lambda r: r["id"] != wanted[0], right)
    assert sorted(rows) == sorted(wanted[1:])


def test_full_text_results_carry_their_whole_rows(db_path, monkeypatch):
    """Full-text hits are ranked on a few columns; the results still carry every column of
    their chunk rows, and a hit whose row is gone by the time results are read is left out."""
    store = Store(str(db_path), create=True)
    rng = np.random.default_rng(6)
    _write(store, rng, 0, 4)
    table = store.table(S.CHUNKS)
    whole = {r["id"]: r for r in table.search().select(hybrid._CHUNK_COLUMNS).limit(None).to_list()}
    for search_type in ("fts", "hybrid"):
        results = search_chunks(
            store, "quokka lighthouse", query_vector=rng.standard_normal(DIM).astype(np.float32),
            search_type=search_type, limit=8,
        )  # fmt: skip
        assert len(results) == 8
        for r in results:
            row = whole[r.chunk_id]
            assert (r.content, r.order, r.headings, r.labels, r.doc_item_refs, r.page_numbers) == (
                row["content"], row["order"], row["headings"], row["labels"], row["doc_item_refs"],
                row["page_numbers"],
            )  # fmt: skip
            assert [(b.page, b.x0, b.y1) for b in r.boxes] == [
                (b["page"], b["x0"], b["y1"]) for b in json.loads(row["boxes"])
            ]

    # the row of the best full-text hit disappears between ranking and reading the results
    first = hybrid.fts_hits(store, "quokka lighthouse", 8, None)[0]["id"]
    real_fetch = hybrid._fetch_rows

    def rows_gone(store, rows, chunk_ids, current, row_of=None, *, complete=False):
        gone = dict(row_of or {})
        gone.pop(first, None)
        real_fetch(store, rows, chunk_ids, lambda r: r["id"] != first and current(r), gone, complete=complete)

    monkeypatch.setattr(hybrid, "_fetch_rows", rows_gone)
    results = search_chunks(store, "quokka lighthouse", query_vector=None, search_type="fts", limit=8)
    assert results and first not in {r.chunk_id for r in results}
    assert all(r.content == whole[r.chunk_id]["content"] for r in results)
