"""Index upkeep: rows written after the indexes were built get folded in, and a large library
gets an ANN index on its vectors without changing what searches find."""

import numpy as np
from store.helpers import new_document

from haiku.rag.search.hybrid import search_chunks
from haiku.rag.store import documents as D
from haiku.rag.store import engine
from haiku.rag.store import schema as S
from haiku.rag.store.engine import Store


def _fill(store: Store, documents: int, rng: np.random.Generator, start: int = 0) -> list[tuple[str, np.ndarray]]:
    """Write ``documents`` three-chunk documents with random unit vectors."""
    store.ensure_vector_table("local", "test-model", 16)
    written = D.write_documents(
        store,
        [
            new_document(f"file:///tmp/doc-{n}.pdf", content_hash=f"h{n}", paragraphs=[f"alpha {n} quokka", f"beta {n}", f"gamma {n}"])
            for n in range(start, start + documents)
        ],
    )
    kept = []
    for document, chunk_ids in written:
        vectors = rng.standard_normal((len(chunk_ids), 16)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        D.add_vectors(store, [document] * len(chunk_ids), chunk_ids, vectors)
        kept.extend(zip(chunk_ids, vectors, strict=True))
    D.mark_hybrid(store, [document for document, _ in written])
    return kept


def test_rows_written_after_indexing_are_folded_in_once_enough_pile_up(db_path, monkeypatch):
    store = Store(str(db_path), create=True)
    _fill(store, 4, np.random.default_rng(0))
    assert store.unindexed_rows() >= 12  # the indexes were built on empty tables
    monkeypatch.setattr(engine, "UNINDEXED_ROWS_BEFORE_MAINTENANCE", 100)
    assert store.maintain_indexes() is False  # 12 rows of lag: not worth a rewrite yet
    assert store.unindexed_rows() >= 12
    monkeypatch.setattr(engine, "UNINDEXED_ROWS_BEFORE_MAINTENANCE", 10)
    assert store.maintain_indexes() is True
    assert store.unindexed_rows() == 0
    hits = search_chunks(store, "quokka", query_vector=None, search_type="fts", limit=10)
    assert len(hits) == 4 and all("quokka" in h.content for h in hits)


def test_a_large_library_gets_a_vector_index_and_search_still_finds_each_vector(db_path, monkeypatch):
    monkeypatch.setattr(engine, "VECTOR_INDEX_MIN_ROWS", 300)
    store = Store(str(db_path), create=True)
    kept = _fill(store, 110, np.random.default_rng(1))  # 330 vectors
    assert not store.table(S.CHUNK_VECTORS).list_indices()
    assert store.maintain_indexes() is True
    names = [i.name for i in store.table(S.CHUNK_VECTORS).list_indices()]
    assert engine.VECTOR_INDEX_NAME in names
    assert store.maintain_indexes() is False  # nothing left to do
    for chunk_id, vector in kept[::37]:
        hits = search_chunks(store, "anything", query_vector=vector, search_type="vector", limit=3)
        assert hits[0].chunk_id == chunk_id


def test_a_read_only_store_never_maintains(db_path):
    Store(str(db_path), create=True).close()
    assert Store(str(db_path), read_only=True).maintain_indexes(force=True) is False


def test_in_memory_vector_search_ranks_exactly_as_lancedb_and_follows_writes(db_path):
    from haiku.rag.search.hybrid import vector_hits

    store = Store(str(db_path), create=True)
    _fill(store, 40, np.random.default_rng(2))  # 120 vectors, below the ANN-index size
    table = store.table(S.CHUNK_VECTORS)
    rng = np.random.default_rng(5)
    some_documents = sorted({d for d in table.to_arrow()["document_id"].to_pylist()})[:7]
    for filter_ids in (None, some_documents):
        for query in rng.standard_normal((5, 16)).astype(np.float32):
            ours = vector_hits(store, query, 10, filter_ids)
            flat = table.search(query).distance_type("cosine")
            if filter_ids is not None:
                flat = flat.where(f"document_id IN ({', '.join(repr(d) for d in filter_ids)})", prefilter=True)
            theirs = flat.select(["chunk_id", "_distance"]).limit(10).to_list()
            assert [h["chunk_id"] for h in ours] == [h["chunk_id"] for h in theirs]
            assert np.allclose([h["_distance"] for h in ours], [h["_distance"] for h in theirs], atol=1e-5)
            if filter_ids is not None:
                assert {h["document_id"] for h in ours} <= set(filter_ids)
    assert store.vector_matrix() is store.vector_matrix()  # cached while the table is unchanged
    before = len(store.vector_matrix())
    new = _fill(store, 1, np.random.default_rng(9), start=1000)  # a write: the next search sees it
    assert len(store.vector_matrix()) == before + 3
    chunk_id, vector = new[0]
    assert vector_hits(store, vector, 1, None)[0]["chunk_id"] == chunk_id


def _exact(store: Store, query: np.ndarray, limit: int) -> list[dict]:
    """LanceDB's own exhaustive search over the full vectors: the reference ranking."""
    table = store.table(S.CHUNK_VECTORS)
    flat = table.search(query).distance_type("cosine").bypass_vector_index()
    return flat.select(["chunk_id", "_distance"]).limit(limit).to_list()


def test_exact_search_serves_every_library_within_the_memory_budget_even_once_indexed(db_path, monkeypatch):
    from haiku.rag.search.hybrid import vector_hits

    monkeypatch.setattr(engine, "VECTOR_INDEX_MIN_ROWS", 300)
    store = Store(str(db_path), create=True)
    _fill(store, 110, np.random.default_rng(3))  # 330 vectors of 16 floats: 21 KB
    store.maintain_indexes()
    assert engine.VECTOR_INDEX_NAME in [i.name for i in store.table(S.CHUNK_VECTORS).list_indices()]
    # the index exists (kept ready for when the library outgrows the budget), but the
    # vectors fit: searches stay exact
    assert store.vector_matrix() is not None
    for query in np.random.default_rng(4).standard_normal((5, 16)).astype(np.float32):
        ours = vector_hits(store, query, 10, None)
        theirs = _exact(store, query, 10)
        assert [h["chunk_id"] for h in ours] == [h["chunk_id"] for h in theirs]


def test_beyond_the_budget_searches_use_the_ann_index_within_the_stated_recall(db_path, monkeypatch):
    from haiku.rag.search.hybrid import vector_hits

    monkeypatch.setattr(engine, "VECTOR_INDEX_MIN_ROWS", 300)
    store = Store(str(db_path), create=True, exact_search_budget_bytes=330 * 16 * 4 - 1)
    _fill(store, 110, np.random.default_rng(5))
    assert store.vector_matrix() is None  # one byte short of the 330 vectors
    store.maintain_indexes()
    found = wanted = 0
    for query in np.random.default_rng(6).standard_normal((20, 16)).astype(np.float32):
        ours = vector_hits(store, query, 10, None)
        theirs = _exact(store, query, 10)
        found += len({h["chunk_id"] for h in ours} & {h["chunk_id"] for h in theirs})
        wanted += len(theirs)
        # refined: the ANN's candidates are re-ranked with the full vectors, so the distances
        # are the exact ones, not the scalar-quantised estimates
        exact = {h["chunk_id"]: h["_distance"] for h in theirs}
        for hit in ours:
            if hit["chunk_id"] in exact:
                assert abs(hit["_distance"] - exact[hit["chunk_id"]]) < 1e-5
    assert found / wanted >= 0.95


def test_released_caches_are_dropped_and_loaded_again_by_the_next_search(db_path):
    from haiku.rag.search.hybrid import vector_hits

    store = Store(str(db_path), create=True)
    kept = _fill(store, 5, np.random.default_rng(7))
    first = store.vector_matrix()
    assert first is not None and store.vector_matrix() is first
    store.current_generations()
    store.release_caches()
    assert store._vector_matrix is None and store._generations is None
    chunk_id, vector = kept[4]
    assert vector_hits(store, vector, 1, None)[0]["chunk_id"] == chunk_id
    assert store.vector_matrix() is not first  # loaded again, same content
    assert len(store.vector_matrix()) == len(first)


def test_a_scoped_exact_search_only_returns_the_scopes_documents_and_all_of_their_best(db_path):
    from haiku.rag.search.hybrid import vector_hits

    store = Store(str(db_path), create=True)
    _fill(store, 30, np.random.default_rng(8))
    table = store.table(S.CHUNK_VECTORS)
    documents = sorted(set(table.to_arrow()["document_id"].to_pylist()))
    scope = [documents[3], documents[17], "no-such-document"]
    query = np.random.default_rng(9).standard_normal(16).astype(np.float32)
    hits = vector_hits(store, query, 10, scope)
    assert len(hits) == 6 and {h["document_id"] for h in hits} == set(scope[:2])
    assert vector_hits(store, query, 10, ["no-such-document"]) == []


def test_the_exact_search_budget_comes_from_the_configuration(db_path):
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import AppConfig

    config = AppConfig()
    config.search.exact_search_budget_mb = 0
    client = HaikuRAG(db_path, config, create=True)
    try:
        _fill(client.store, 2, np.random.default_rng(10))
        assert client.store.exact_search_budget_bytes == 0
        assert client.store.vector_matrix() is None
    finally:
        client.close()


def _versions(store: Store) -> int:
    return sum(len(t.list_versions()) for t in store._tables.values())


def test_superseded_versions_are_cleaned_up_unless_a_reader_in_another_process_has_the_store_open(db_path, monkeypatch):
    from datetime import timedelta

    from haiku.rag.store import versions

    monkeypatch.setattr(engine, "KEEP_VERSIONS_WITHOUT_READERS", timedelta(0))
    store = Store(str(db_path), create=True)
    rng = np.random.default_rng(11)
    for n in range(6):  # one document at a time, as a script's create_document loop writes
        _fill(store, 1, rng, start=n)
    many = _versions(store)

    reader = Store(str(db_path), read_only=True)  # a reader (another process's read-only open)
    assert store.readers_present() and store.keep_versions_for() == engine.KEEP_VERSIONS_FOR
    store.maintain_indexes(force=True)
    kept = _versions(store)
    assert kept > many  # nothing superseded was removed (compaction added versions)
    assert reader.current_generations() == store.current_generations()
    reader.close()

    assert not store.readers_present()
    store.maintain_indexes(force=True)
    assert _versions(store) < many / 2  # superseded versions gone once no reader needs them
    hits = search_chunks(store, "quokka", query_vector=None, search_type="fts", limit=10)
    assert len(hits) == 6

    # a backup holds a lease for as long as it copies
    leases: list[bool] = []
    real_copytree = versions.shutil.copytree

    def copying(*args, **kwargs):
        leases.append(store.readers_present())
        return real_copytree(*args, **kwargs)

    monkeypatch.setattr(versions.shutil, "copytree", copying)
    versions.backup(str(db_path), db_path.parent / "copy.lancedb")
    assert leases and all(leases) and not store.readers_present()


def test_after_an_append_only_the_new_vectors_are_read_and_any_other_change_reloads_exactly(db_path, monkeypatch):
    from haiku.rag.store import vectors

    loads: list[int] = []
    real_load = vectors.VectorMatrix.load.__func__

    def counted(cls, table, chunks=None):
        loads.append(1)
        return real_load(cls, table, chunks)

    monkeypatch.setattr(vectors.VectorMatrix, "load", classmethod(counted))

    def same_as_a_fresh_load(matrix) -> None:
        fresh = real_load(vectors.VectorMatrix, store.table(S.CHUNK_VECTORS), store.table(S.CHUNKS))
        order = np.argsort(matrix.chunk_ids.astype(str))
        fresh_order = np.argsort(fresh.chunk_ids.astype(str))
        assert list(matrix.chunk_ids[order]) == list(fresh.chunk_ids[fresh_order])
        assert np.allclose(matrix.vectors[order], fresh.vectors[fresh_order])
        ours = [matrix.document_names[c] for c in matrix.document_codes[order]]
        assert ours == [fresh.document_names[c] for c in fresh.document_codes[fresh_order]]
        assert list(matrix.first_pages[order]) == list(fresh.first_pages[fresh_order])
        assert vectors.PAGE_UNKNOWN not in matrix.first_pages

    store = Store(str(db_path), create=True)
    rng = np.random.default_rng(12)
    _fill(store, 4, rng)
    first = store.vector_matrix()
    assert len(loads) == 1
    new = _fill(store, 3, rng, start=100)  # appends (as ingestion writes them)
    grown = store.vector_matrix()
    assert len(loads) == 1 and len(grown) == len(first) + 9  # only the new rows were read
    same_as_a_fresh_load(grown)
    chunk_id, vector = new[-1]
    assert grown.nearest(vector, 1, None)[0]["chunk_id"] == chunk_id
    scoped = grown.nearest(vector, 3, [grown.document_names[-1]])
    assert {h["document_id"] for h in scoped} == {grown.document_names[-1]}

    doomed = grown.document_names[0]
    store.table(S.CHUNK_VECTORS).delete(f"document_id = '{doomed}'")  # not an append
    after_delete = store.vector_matrix()
    assert len(loads) == 2 and doomed not in after_delete.documents
    same_as_a_fresh_load(after_delete)
    store.maintain_indexes(force=True)  # compaction rewrites the fragments
    compacted = store.vector_matrix()
    assert len(loads) == 3
    same_as_a_fresh_load(compacted)


def test_fragments_of_one_document_writes_are_compacted_before_many_rows_lag(db_path, monkeypatch):
    """Written one document at a time, each write appends a fragment per table and every lookup
    opens them all: upkeep runs once enough small fragments pile up, whatever the row lag."""
    monkeypatch.setattr(engine, "UNINDEXED_ROWS_BEFORE_MAINTENANCE", 10**9)  # only fragments count
    monkeypatch.setattr(engine, "SMALL_FRAGMENTS_BEFORE_MAINTENANCE", 8)
    store = Store(str(db_path), create=True)
    rng = np.random.default_rng(5)
    for n in range(7):
        D.write_document(store, new_document(f"file:///tmp/one-{n}.pdf", content_hash=f"o{n}"))
        assert store.maintain_indexes() is False
    assert store.small_fragments() == 7
    _fill(store, 1, rng, start=100)  # the eighth fragment
    assert store.small_fragments() >= 8
    assert store.maintain_indexes() is True
    assert store.small_fragments() <= 1  # compacted
    assert store.maintain_indexes() is False
    assert D.find_document_by_uri(store, "file:///tmp/one-3.pdf") is not None
    assert len(D.list_documents(store)) == 8
    store.close()


def test_the_fragment_trigger_grows_with_the_library(db_path, monkeypatch):
    monkeypatch.setattr(engine, "UNINDEXED_ROWS_BEFORE_MAINTENANCE", 10**9)
    monkeypatch.setattr(engine, "SMALL_FRAGMENTS_BEFORE_MAINTENANCE", 2)
    store = Store(str(db_path), create=True)
    store.ensure_vector_table("local", "test-model", 16)
    D.write_documents(  # 300 chunks: the trigger is isqrt(300) // 2 = 8 fragments, not 2
        store,
        [new_document(f"file:///tmp/big-{n}.pdf", content_hash=f"b{n}") for n in range(100)],
    )
    store.maintain_indexes(force=True)
    assert store.small_fragments() == 1
    for n in range(6):
        D.write_document(store, new_document(f"file:///tmp/one-{n}.pdf", content_hash=f"o{n}"))
        assert store.maintain_indexes() is False
    D.write_document(store, new_document("file:///tmp/one-6.pdf", content_hash="o6"))
    assert store.small_fragments() == 8
    assert store.maintain_indexes() is True
    store.close()


def test_upkeep_counts_the_writes_it_is_told_about_and_reads_the_tables_again_after_any_other(db_path, monkeypatch):
    """Between writes that note what they append, the trigger is counted, not read from every
    table's stats; any other write (here a deletion) makes the next check read them again, and
    the count fires upkeep exactly where reading would have."""
    monkeypatch.setattr(engine, "UNINDEXED_ROWS_BEFORE_MAINTENANCE", 10**9)
    monkeypatch.setattr(engine, "SMALL_FRAGMENTS_BEFORE_MAINTENANCE", 6)
    reads = []
    real = Store._read_upkeep_bound
    monkeypatch.setattr(Store, "_read_upkeep_bound", lambda self: reads.append(1) or real(self))
    store = Store(str(db_path), create=True)
    written = []
    for n in range(4):
        written.append(D.write_document(store, new_document(f"file:///tmp/c-{n}.pdf", content_hash=f"c{n}"))[0])
        assert store.maintain_indexes() is False
        assert store.small_fragments() == n + 1
    assert len(reads) == 1  # the first check; the three writes after it were counted
    D.delete_document(store, written[0].id)  # a write that notes nothing: the count is forgotten
    assert store.maintain_indexes() is False
    assert len(reads) == 2
    left = store.small_fragments()  # the deleted document's fragments went with it
    for n in range(4, 4 + 5 - left):
        D.write_document(store, new_document(f"file:///tmp/c-{n}.pdf", content_hash=f"c{n}"))
        assert store.maintain_indexes() is False  # up to 5 small fragments of 6
    assert store.small_fragments() == 5 and len(reads) == 2
    D.write_document(store, new_document("file:///tmp/last.pdf", content_hash="last"))
    assert store.maintain_indexes() is True  # the sixth: due, as a read of the stats says
    assert len(reads) == 3  # the count said due; the read confirmed it before the rewrite
    assert store.small_fragments() <= 1
    assert len(D.list_documents(store)) == 4 + 5 - left
    store.close()


def test_a_failed_write_forgets_the_count(db_path, monkeypatch):
    monkeypatch.setattr(engine, "UNINDEXED_ROWS_BEFORE_MAINTENANCE", 10**9)
    store = Store(str(db_path), create=True)
    D.write_document(store, new_document("file:///tmp/f-0.pdf", content_hash="f0"))
    store.maintain_indexes()
    assert store._upkeep_bound is not None
    try:
        with store.write_transaction():
            store.note_append(rows=3)
            raise ValueError("interrupted")
    except ValueError:
        pass
    assert store._upkeep_bound is None  # rolled back tables are read again at the next check
    store.close()


def test_beyond_the_budget_an_opened_store_loads_its_indexes_in_the_background(db_path, monkeypatch):
    """Searches through the ANN index of a fresh handle read the partitions they probe into
    LanceDB's index cache; opening such a store loads them beforehand (a thread), and searches
    find the same either way. Within the budget (exact search in memory) nothing is loaded, nor
    is an index too large for its share of the cache (it would evict itself)."""
    from haiku.rag.search.hybrid import vector_hits

    monkeypatch.setattr(engine, "VECTOR_INDEX_MIN_ROWS", 300)
    store = Store(str(db_path), create=True)
    _fill(store, 110, np.random.default_rng(11))  # 330 vectors of 16
    store.maintain_indexes()
    assert not store.serves_searches and store.wait_warm(0)  # a writing handle warms nothing
    queries = np.random.default_rng(12).standard_normal((5, 16)).astype(np.float32)
    store.close()

    within = Store(str(db_path), read_only=True)
    assert within.prewarm() is False and within.wait_warm(0)
    opened = within._session.size_bytes  # what an open alone caches (metadata)
    within.close()

    warm = Store(str(db_path), read_only=True, exact_search_budget_bytes=0)
    assert warm.wait_warm(0) and warm._session.size_bytes == opened  # nothing until asked
    assert warm.prewarm() is True and warm.wait_warm(60)
    warmed = warm._session.size_bytes  # the index's parts, before any search
    assert warmed > opened + 10_000
    warm_found = [[h["chunk_id"] for h in vector_hits(warm, q, 10, None)] for q in queries]
    warm.close()

    monkeypatch.setattr(engine, "INDEX_CACHE_BYTES", 330 * (16 + engine.PREWARM_BYTES_PER_VECTOR_BEYOND_DIM))
    cold = Store(str(db_path), read_only=True, exact_search_budget_bytes=0)
    assert cold.prewarm() is True and cold.wait_warm(60)  # only the page map was read (store/vectors.py PageMap)
    assert cold.page_map() is not None and cold._session.size_bytes < warmed
    assert [[h["chunk_id"] for h in vector_hits(cold, q, 10, None)] for q in queries] == warm_found
    cold.close()

    # a handle nobody warmed: its first search through the index starts the prewarm
    first = Store(str(db_path), read_only=True, exact_search_budget_bytes=0)
    assert [h["chunk_id"] for h in vector_hits(first, queries[0], 10, None)] == warm_found[0]
    assert first.serves_searches and first.wait_warm(60) and first.page_map() is not None
    first.close()


def test_a_writer_that_serves_no_searches_starts_fresh_caches_after_upkeep(db_path, monkeypatch):
    """Upkeep supersedes index files and manifests that LanceDB's caches keep until their bound;
    a handle that serves no searches reopens its tables on new caches (and still finds every
    document), one that does keeps the caches its searches filled."""
    monkeypatch.setattr(engine, "UNINDEXED_ROWS_BEFORE_MAINTENANCE", 10**9)
    monkeypatch.setattr(engine, "SMALL_FRAGMENTS_BEFORE_MAINTENANCE", 4)
    store = Store(str(db_path), create=True)
    for n in range(4):
        D.write_document(store, new_document(f"file:///tmp/w-{n}.pdf", content_hash=f"w{n}"))
        assert D.find_document_by_uri(store, f"file:///tmp/w-{n}.pdf") is not None
    session = store._session
    assert store.maintain_indexes() is True
    assert store._session is not session
    assert all(D.find_document_by_uri(store, f"file:///tmp/w-{n}.pdf") is not None for n in range(4))
    D.write_document(store, new_document("file:///tmp/w-4.pdf", content_hash="w4"))  # writes go on
    assert len(D.list_documents(store)) == 5
    store.prewarm()  # now it serves searches
    store.wait_warm(30)
    session = store._session
    for n in range(5, 9):
        D.write_document(store, new_document(f"file:///tmp/w-{n}.pdf", content_hash=f"w{n}"))
    assert store.maintain_indexes() is True
    assert store._session is session
    store.close()
    reopened = Store(str(db_path))
    assert len(D.list_documents(reopened)) == 9
    reopened.close()


def test_compaction_keeps_the_row_ids_the_indexes_name(db_path):
    # Indexes name rows by row id. When a row id is the row's address, compaction moves every
    # row and upkeep must rewrite every index of the table too (the full-text index whole, a
    # cost growing with the library); with stable row ids it leaves them as they are.
    store = Store(str(db_path), create=True)
    for n in range(6):
        D.write_document(store, new_document(f"file:///tmp/doc-{n}.pdf", content_hash=f"h{n}", paragraphs=[f"alpha {n} quokka", f"beta {n}"]))
    tables = (S.CHUNKS, S.DOCUMENTS, S.DOCUMENT_BLOBS, S.DOCUMENT_ITEMS)

    def row_ids() -> dict[str, list[int]]:
        return {name: sorted(store.table(name).search().with_row_id(True).limit(None).to_arrow()["_rowid"].to_pylist()) for name in tables}

    before = row_ids()
    assert all(store.table(name).stats()["fragment_stats"]["num_fragments"] >= 6 for name in tables)
    assert store.maintain_indexes(force=True) is True
    assert all(store.table(name).stats()["fragment_stats"]["num_fragments"] == 1 for name in tables)  # compacted
    assert row_ids() == before
    hits = search_chunks(store, "quokka", query_vector=None, search_type="fts", limit=10)
    assert sorted(h.content for h in hits) == sorted(f"alpha {n} quokka" for n in range(6))
    assert D.find_document_by_uri(store, "file:///tmp/doc-3.pdf") is not None


def test_the_full_text_index_keeps_no_positions_and_quoted_questions_still_search(db_path):
    # Upkeep merges new rows into the whole full-text index; positions made that merge ~3x
    # dearer (store/engine.py ``_create_indexes``) and no query uses them: quotes are stripped
    # before the query reaches LanceDB (a phrase query needs positions).
    store = Store(str(db_path), create=True)
    _fill(store, 4, np.random.default_rng(9))
    (fts,) = [i for i in store.table(S.CHUNKS).list_indices() if i.index_type == "FTS"]
    assert fts.index_details["with_position"] is False
    assert fts.index_details["remove_stop_words"] is False  # ranking as before
    for question in ('"alpha 2 quokka"', "alpha 2 'quokka'", 'what is "beta 3"?'):
        hits = search_chunks(store, question, query_vector=None, search_type="fts", limit=3)
        assert hits, question
