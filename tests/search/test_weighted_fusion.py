"""Weighted reciprocal-rank fusion: per-arm weights and pools; the defaults are plain RRF and a
weight of 0 reproduces the other arm exactly."""

from __future__ import annotations

import numpy as np
import pytest
from search.vector_server import vector_server
from store.helpers import new_document

from haiku.rag.config import FusionConfig, load_config
from haiku.rag.errors import ConfigError
from haiku.rag.search.hybrid import SearchSettings, reciprocal_rank_fusion, search_chunks
from haiku.rag.store import documents as D
from haiku.rag.store.engine import Store


def _store(db_path) -> tuple[Store, np.ndarray]:
    """Twelve documents; some chunks mention quokkas, every chunk has a random unit vector."""
    rng = np.random.default_rng(7)
    store = Store(str(db_path), create=True)
    store.ensure_vector_table("local", "test-model", 16)
    written = D.write_documents(
        store,
        [
            new_document(
                f"file:///tmp/doc-{n}.pdf",
                content_hash=f"h{n}",
                # no two chunks score alike in full text: LanceDB breaks exact ties differently
                # for different pool sizes, which would make the arm itself unstable
                paragraphs=["quokka " * (n + 1) + f"island {n}", f"beta {n} quokka" + " filler" * n if n % 3 else f"beta {n}", f"gamma {n}"],
            )
            for n in range(12)
        ],
    )
    for document, chunk_ids in written:
        vectors = rng.standard_normal((len(chunk_ids), 16)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        D.add_vectors(store, [document] * len(chunk_ids), chunk_ids, vectors)
    D.mark_hybrid(store, [document for document, _ in written])
    query = rng.standard_normal(16).astype(np.float32)
    return store, query / np.linalg.norm(query)


def _ids(results) -> list[str]:
    return [r.chunk_id for r in results]


def test_weights_one_and_zero_reproduce_the_single_arm(db_path):
    store, query = _store(db_path)
    fts = _ids(search_chunks(store, "quokka", query_vector=None, search_type="fts", limit=6))
    vec = _ids(search_chunks(store, "quokka", query_vector=query, search_type="vector", limit=6))
    plain = _ids(search_chunks(store, "quokka", query_vector=query, limit=6))
    assert len(fts) == len(vec) == 6 and plain not in (fts, vec), "precondition: the arms and their fusion differ"

    def never_embedded() -> np.ndarray:
        raise AssertionError("an arm of weight 0 is not run")

    text_only = search_chunks(store, "quokka", query_vector=never_embedded, limit=6, settings=SearchSettings(vector_weight=0))
    assert _ids(text_only) == fts
    vector_only = search_chunks(store, "quokka", query_vector=query, limit=6, settings=SearchSettings(fts_weight=0))
    assert _ids(vector_only) == vec


def test_default_weights_are_plain_rrf_and_weights_shift_the_order():
    rankings = [["a", "b", "c"], ["b", "a", "d"]]
    plain = reciprocal_rank_fusion(rankings, k=60)
    assert reciprocal_rank_fusion(rankings, k=60, weights=[1, 1]) == plain
    assert plain[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert [i for i, _ in reciprocal_rank_fusion(rankings, weights=[2, 1])][:2] == ["a", "b"]
    assert [i for i, _ in reciprocal_rank_fusion(rankings, weights=[1, 2])][:2] == ["b", "a"]
    assert [i for i, _ in reciprocal_rank_fusion(rankings, weights=[1, 0])] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="2 weights for 1 rankings"):
        reciprocal_rank_fusion([["a"]], weights=[1, 1])


def test_per_arm_pools_bound_what_each_arm_contributes(db_path):
    store, query = _store(db_path)
    fts_top2 = set(_ids(search_chunks(store, "quokka", query_vector=None, search_type="fts", limit=2)))
    vec_top2 = set(_ids(search_chunks(store, "quokka", query_vector=query, search_type="vector", limit=2)))
    hits = search_chunks(store, "quokka", query_vector=query, limit=20, settings=SearchSettings(fts_pool=2, vector_pool=2))
    assert set(_ids(hits)) == fts_top2 | vec_top2


def test_fusion_settings_are_typed_and_default_to_plain_rrf(monkeypatch):
    fusion = load_config().search.fusion
    assert (fusion.fts_weight, fusion.vector_weight, fusion.fts_pool, fusion.vector_pool) == (1, 1, None, None)
    monkeypatch.setenv("HAIKU_RAG_SEARCH__FUSION__VECTOR_WEIGHT", "0.5")
    assert load_config().search.fusion.vector_weight == 0.5
    monkeypatch.setenv("HAIKU_RAG_SEARCH__FUSION__FTS_WEIGHT", "0")
    monkeypatch.setenv("HAIKU_RAG_SEARCH__FUSION__VECTOR_WEIGHT", "0")
    with pytest.raises(ConfigError, match="search.fusion.*cannot both be 0"):
        load_config()
    with pytest.raises(ValueError):
        FusionConfig(fts_weight=-1)


def test_score_fusion_keeps_how_far_apart_an_arms_candidates_are():
    from haiku.rag.search.hybrid import score_fusion

    # full text: a and b nearly tied, c far behind; vectors: c a clear first, b last
    text = [("a", 12.0), ("b", 11.9), ("c", 2.0)]
    vectors = [("c", 0.90), ("a", 0.50), ("b", 0.10)]
    # rank fusion sees only the orders: a (1st, 2nd) wins
    assert [item for item, _ in reciprocal_rank_fusion([[i for i, _ in text], [i for i, _ in vectors]])][0] == "a"
    fused = score_fusion([text, vectors], [1.0, 1.0])
    # a: 1 + 0.5 = 1.5; c: 0 + 1 = 1.0; b: 0.99 + 0 = 0.99
    assert [item for item, _ in fused] == ["a", "c", "b"]
    assert fused[0][1] == pytest.approx(1.5) and fused[1][1] == pytest.approx(1.0) and fused[2][1] == pytest.approx(0.99)
    # the weights scale each arm; weight 0 adds nothing, not even ids; one candidate counts 1
    assert score_fusion([text, vectors], [0.0, 1.0]) == [("c", 1.0), ("a", 0.5), ("b", 0.0)]
    assert score_fusion([[("x", 3.0)], []], [1.0, 1.0]) == [("x", 1.0)]


def test_hybrid_search_fuses_by_score_by_default(db_path, config):
    from haiku.rag.client import HaikuRAG

    assert config.search.fusion.method == "score"
    store, query = _store(db_path)
    by_score = _ids(search_chunks(store, "quokka island", query_vector=query, limit=6, settings=SearchSettings(fusion="score")))
    by_rank = _ids(search_chunks(store, "quokka island", query_vector=query, limit=6, settings=SearchSettings(fusion="rrf")))
    assert by_score != by_rank, "precondition: the two fusions differ here"
    store.close()
    with vector_server(16) as server:
        server.vectors["quokka island"] = query  # the configured embedder's vector for the query
        client = HaikuRAG(db_path, server.configure(config), skip_validation=True)
        try:
            assert _ids(client.search_sync("quokka island", 6)) == by_score
            config.search.fusion.method = "rrf"
            assert _ids(client.search_sync("quokka island", 6)) == by_rank
        finally:
            client.close()
