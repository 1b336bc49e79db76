"""Documents a query names: found by file name or title, weighted by how rare each name word
is, and ranked higher by ``name_weight`` even when their chunks are outside the plain pool."""

from __future__ import annotations

import numpy as np
from search.paged import paged_document

from haiku.rag.search.hybrid import SearchSettings, search_chunks
from haiku.rag.search.naming import NameIndex, named_documents, query_terms
from haiku.rag.store import documents as D
from haiku.rag.store.engine import Store

FILINGS = {  # id -> (uri, title)
    "a": ("file:///lib/3M_2018_10K.pdf", None),
    "b": ("file:///lib/3M_2022_10K.pdf", None),
    "c": ("file:///lib/PEPSICO_2022_10K.pdf", None),
    "d": ("file:///lib/AMERICANWATERWORKS_2020_10K.pdf", None),
    "e": ("file:///lib/scan-0042.pdf", "Kraft Heinz Annual Report 2019"),
    "f": ("file:///lib/Kraft%20Heinz%20annual%20report.pdf", None),
}


def test_a_query_names_documents_by_their_rarest_words():
    index = NameIndex(FILINGS)
    named = index.named("What is the FY2018 capital expenditure amount for 3M?")
    # both of 3M's filings are named, the one whose year is asked more fully
    assert set(named) == {"a", "b"} and named["a"] > named["b"]
    # "10K" is in every name: it names nothing by itself
    assert index.named("Which risks does this 10K list?") == {}
    # a bare number never names a document, even a year only one name has
    assert index.named("What happened in 2020?") == {}
    # adjacent words joined, possessives, case and URL quoting ignored; a title is not a name
    assert set(index.named("How much did American Water Works pay in dividends?")) == {"d"}
    assert set(index.named("What is Kraft Heinz's inventory turnover?")) == {"f"}
    # scope narrows the candidates (a collection)
    assert index.named("3M capex in FY2018", scope=["b", "c"]).keys() == {"b"}


def test_query_terms_split_and_join_words():
    terms = query_terms("Pfizer's FY2018 results (American Water)")
    assert {"pfizer", "fy2018", "fy", "2018", "americanwater", "results"} <= terms
    assert "s" not in terms and "the" not in query_terms("the")


def test_a_changed_label_mapping_is_indexed_anew_not_answered_from_the_cached_index():
    first = named_documents("3M FY2018", FILINGS)
    changed = dict(FILINGS) | {"f": ("file:///lib/3M_2019_10K.pdf", None)}
    assert set(first) == {"a", "b"} and "f" in named_documents("3M FY2019", changed)


def _library(db_path) -> tuple[Store, dict[str, str]]:
    """Two filings with the same text, and 25 other documents that match "revenue" more."""
    store = Store(str(db_path), create=True)
    store.ensure_vector_table("local", "test-model", 8)
    same = [(1, "Revenue grew as stores reopened and shipping costs eased")]
    documents = [
        paged_document("file:///lib/ACME_2019_10K.pdf", same),
        paged_document("file:///lib/GLOBEX_2019_10K.pdf", same),
    ] + [
        paged_document(f"file:///lib/note-{n}.pdf", [(1, "revenue revenue " + "ledger " * (n % 3) + f"memo {n}")])
        for n in range(25)
    ]
    written = D.write_documents(store, documents)
    rng = np.random.default_rng(11)
    for document, chunk_ids in written:
        vectors = rng.standard_normal((len(chunk_ids), 8)).astype(np.float32)
        D.add_vectors(store, [document] * len(chunk_ids), chunk_ids, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    D.mark_hybrid(store, [document for document, _ in written])
    return store, {document.uri.rsplit("/", 1)[1]: document.id for document, _ in written}


def test_a_named_document_ranks_first_even_from_outside_the_plain_pool(db_path):
    store, ids = _library(db_path)
    query = "What was Globex revenue in 2019?"
    plain = search_chunks(store, query, query_vector=None, search_type="fts", limit=5)
    assert ids["GLOBEX_2019_10K.pdf"] not in {r.document_id for r in plain}, "precondition: outside the top 5"
    deep = search_chunks(store, query, query_vector=None, search_type="fts", limit=20)
    assert ids["GLOBEX_2019_10K.pdf"] not in {r.document_id for r in deep}, "precondition: outside the pool"
    for search_type in ("fts", "vector", "hybrid"):
        vector = np.random.default_rng(5).standard_normal(8).astype(np.float32)
        named = search_chunks(
            store, query, query_vector=vector, search_type=search_type, limit=5,
            settings=SearchSettings(fusion="score", name_weight=1.0),
        )
        assert named[0].document_id == ids["GLOBEX_2019_10K.pdf"], search_type
        # the same text in a document the query does not name gains nothing
        assert ids["ACME_2019_10K.pdf"] not in {r.document_id for r in named[:1]}


def test_a_scope_keeps_out_named_documents_outside_it(db_path, config):
    from haiku.rag.client import HaikuRAG

    store, ids = _library(db_path)
    store.close()
    config.search.name_weight = 1.0
    client = HaikuRAG(db_path, config, skip_validation=True)
    try:
        query = "What was Globex revenue in 2019?"
        assert client.search_sync(query, 5, "fts")[0].document_id == ids["GLOBEX_2019_10K.pdf"]
        others = [i for name, i in ids.items() if name != "GLOBEX_2019_10K.pdf"]
        scoped = client.search_sync(query, 5, "fts", document_ids=others)
        assert len(scoped) == 5 and ids["GLOBEX_2019_10K.pdf"] not in {r.document_id for r in scoped}
        config.search.name_weight = 0.0
        assert ids["GLOBEX_2019_10K.pdf"] not in {r.document_id for r in client.search_sync(query, 5, "fts")}
    finally:
        client.close()


def test_words_mixing_letters_and_digits_match_as_a_scan_of_every_such_word_would():
    """Mixed words are filed under their rarest part; a query finds the same ones a scan of all
    of them finds (the scan cost a query O(documents): 10k names like "d0001234")."""
    from haiku.rag.search.naming import _PART

    names = [f"file:///lib/{stem}.pdf" for stem in (
        "d0001234", "d0001235", "3M_2018_10K", "fy2018_q3", "v2_report", "arxiv2101v2", "Q3FY2018",
        "x1y2z3", "plain_name", "report_v2_final",
    )]  # fmt: skip
    index = NameIndex({str(i): (uri, None) for i, uri in enumerate(names)})
    mixed = {w: _PART.findall(w) for w in index.postings if len(_PART.findall(w)) > 1}
    for query in ("d0001234 results", "D 0001235", "3m fy2018 10k", "q3 fy 2018", "report v 2",
                  "arxiv 2101 v2", "x 1 y 2 z3", "x1 y2", "nothing at all", "v 2"):  # fmt: skip
        terms = query_terms(query)
        expected = {w for w, parts in mixed.items() if all(p in terms for p in parts)}
        found = {w for t in terms for w, parts in index.parts.get(t, ()) if all(p in terms for p in parts)}
        assert found == expected, query
    for i, stem in ((0, "d0001234"), (5, "arxiv2101v2"), (6, "q3fy2018"), (7, "x1y2z3")):
        assert str(i) in index.named(" ".join(_PART.findall(stem)))  # named by its parts apart
