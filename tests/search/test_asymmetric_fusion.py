"""Asymmetric score fusion (``search.fusion.fts_only_share``): the full-text arm promotes the
vector arm's candidates fully, but a passage only full text found enters with a share of its
score; a document whose vectors have not landed yet keeps its full-text hits whole."""

from __future__ import annotations

import numpy as np
import pytest
from search.paged import paged_document
from search.vector_server import vector_server

from haiku.rag.config import FusionConfig, load_config
from haiku.rag.search.hybrid import SearchSettings, score_fusion, search_chunks
from haiku.rag.store import documents as D
from haiku.rag.store.engine import Store

DIM = 8


def _unit(*weights: float) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[: len(weights)] = weights
    return vector / np.linalg.norm(vector)


QUERY = _unit(1.0)
# (text, vector): the filing's statement pages are near the query in meaning and name the line
# item once; the narrative page repeats the query's word but means something else
EMBEDDED = [
    ("quokka numbers on the island rose", _unit(1.0, 0.2)),
    ("quokka colony census table by year", _unit(1.0, 0.5)),
    ("quokka sightings per survey season", _unit(1.0, 0.9)),
    ("quokka quokka quokka quokka: the word the narrative keeps repeating", _unit(0.0, 1.0)),
    (
        "a long narrative aside that mentions the quokka once among " + "many other words " * 8,
        _unit(0.0, 0.0, 1.0),
    ),
    ("ferry timetable and harbour fees", _unit(0.0, 0.0, 0.0, 1.0)),
]
NARRATIVE = 3


def _store(db_path, *, pending_text: str | None = None) -> tuple[Store, list[str], str | None]:
    """One embedded filing (a chunk per page); with ``pending_text``, a second document whose
    vectors have not landed yet (index state "text") and the id of its one chunk."""
    store = Store(str(db_path), create=True)
    store.ensure_vector_table("local", "test-model", DIM)
    news = [
        paged_document(
            "file:///tmp/filing.pdf", [(page, text) for page, (text, _) in enumerate(EMBEDDED, 1)]
        )
    ]
    if pending_text:
        news.append(paged_document("file:///tmp/new.pdf", [(1, pending_text)]))
    written = D.write_documents(store, news)
    filing, chunk_ids = written[0]
    D.add_vectors(store, [filing] * len(chunk_ids), chunk_ids, np.stack([v for _, v in EMBEDDED]))
    D.mark_hybrid(store, [filing])
    pending = written[1][1][0] if pending_text else None
    return store, chunk_ids, pending


def _ids(store: Store, share: float, **options) -> list[str]:
    results = search_chunks(
        store,
        "quokka",
        query_vector=QUERY,
        limit=6,
        settings=SearchSettings(fusion="score", vector_pool=3, fts_only_share=share, **options),
    )
    return [r.chunk_id for r in results]


def test_a_passage_only_full_text_found_enters_with_a_share_of_its_score(db_path):
    store, chunks, _ = _store(db_path)
    vector_candidates = chunks[:3]  # the vector arm's pool of 3: the three statement pages
    symmetric = _ids(store, 1.0)
    # precondition: at 1:1 the repeating narrative page displaces a statement page
    assert symmetric.index(chunks[NARRATIVE]) < symmetric.index(chunks[2])
    asymmetric = _ids(store, 0.25)
    # the vector arm's candidates, promoted by full text, now all come before the narrative page
    assert asymmetric[:3] == vector_candidates
    assert asymmetric.index(chunks[NARRATIVE]) == 3
    # share 0 keeps full-text-only passages (below everything the vector arm returned)
    assert _ids(store, 0.0)[:4] == asymmetric[:4]
    store.close()


def test_a_document_without_vectors_keeps_its_full_text_hits_whole(db_path):
    # a freshly added document is findable before its vectors land: the vector arm could not
    # have returned it, so its full-text hit is not discounted
    store, chunks, pending = _store(
        db_path, pending_text="quokka quokka quokka quokka quokka quokka"
    )
    (new_document,) = store.documents_without_vectors()
    assert new_document != _document_of(store, chunks[0])
    scores = {share: _scores(store, share) for share in (1.0, 0.25)}
    assert (
        scores[0.25][pending] == scores[1.0][pending] == pytest.approx(1.0)
    )  # full text's best, whole
    # the embedded narrative page, which the vector arm could have returned, is still discounted
    assert scores[0.25][chunks[NARRATIVE]] == pytest.approx(0.25 * scores[1.0][chunks[NARRATIVE]])
    assert list(scores[0.25]).index(pending) < list(scores[0.25]).index(
        chunks[2]
    )  # above a statement page
    store.close()


def _scores(store: Store, share: float) -> dict[str, float]:
    results = search_chunks(
        store,
        "quokka",
        query_vector=QUERY,
        limit=8,
        settings=SearchSettings(fusion="score", vector_pool=3, fts_only_share=share),
    )
    return {r.chunk_id: r.score for r in results}


def test_the_share_does_not_touch_searches_the_vector_arm_cannot_answer(db_path):
    store, _, _ = _store(db_path)
    fts = [
        r.chunk_id
        for r in search_chunks(store, "quokka", query_vector=None, search_type="fts", limit=6)
    ]
    # no query vector (no embedder yet) or vector weight 0: the full-text order, unchanged
    assert [
        r.chunk_id
        for r in search_chunks(
            store, "quokka", query_vector=None, limit=6, settings=SearchSettings(fts_only_share=0.25, fusion="score")
        )
    ] == fts
    assert _ids(store, 0.25, vector_weight=0) == fts
    store.close()


def _document_of(store: Store, chunk_id: str) -> str:
    return (
        store.table("chunks")
        .search()
        .where(f"id = '{chunk_id}'")
        .select(["document_id"])
        .to_list()[0]["document_id"]
    )


def test_the_librarys_search_uses_the_configured_share(db_path, config):
    from haiku.rag.client import HaikuRAG

    store, chunks, _ = _store(db_path)
    expected = {share: _ids(store, share) for share in (1.0, 0.25)}
    assert expected[1.0] != expected[0.25], "precondition: the share changes the order here"
    store.close()
    with vector_server(DIM) as server:
        server.vectors["quokka"] = QUERY  # the configured embedder's vector for the query
        config.search.fusion.vector_pool = 3
        config.search.page_share = None
        client = HaikuRAG(db_path, server.configure(config), skip_validation=True)
        try:
            assert [r.chunk_id for r in client.search_sync("quokka", 6)] == expected[
                0.25
            ]  # the default
            config.search.fusion.fts_only_share = 1.0
            assert [r.chunk_id for r in client.search_sync("quokka", 6)] == expected[1.0]
        finally:
            client.close()


def test_score_fusion_shares_apply_only_to_candidates_one_arm_returned():
    text = [("both", 10.0), ("text-only", 8.0), ("new", 6.0), ("floor", 2.0)]
    vectors = [("both", 0.9), ("vector-only", 0.5), ("vector-floor", 0.1)]
    fused = dict(score_fusion([text, vectors], [1.0, 1.0], alone=[0.25, 1.0], whole={"new"}))
    assert fused["both"] == pytest.approx(1.0 + 1.0)  # returned by both: untouched
    assert fused["text-only"] == pytest.approx(
        0.25 * 0.75
    )  # (8 - 2) / 8 of the text arm, a quarter kept
    assert fused["new"] == pytest.approx(0.5)  # in ``whole``: kept in full
    assert fused["vector-only"] == pytest.approx(0.5)  # the vector arm's share is 1
    # the default is symmetric: the plain sum of normalised scores
    assert dict(score_fusion([text, vectors], [1.0, 1.0]))["text-only"] == pytest.approx(0.75)
    # an arm of weight 0 does not make the other arm's candidates "returned by both"
    assert dict(score_fusion([text, vectors], [1.0, 0.0], alone=[0.25, 1.0]))[
        "both"
    ] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="2 arms, 2 weights and 1 shares"):
        score_fusion([text, vectors], [1.0, 1.0], alone=[0.5])


def test_the_share_is_a_fusion_setting_with_the_chosen_default(monkeypatch):
    assert load_config().search.fusion.fts_only_share == 0.25
    monkeypatch.setenv("HAIKU_RAG_SEARCH__FUSION__FTS_ONLY_SHARE", "1")
    assert load_config().search.fusion.fts_only_share == 1.0
    with pytest.raises(ValueError):
        FusionConfig(fts_only_share=1.5)


def test_the_full_text_arms_only_or_far_best_hit_keeps_its_whole_score(db_path):
    """A rare word found in one passage ("SLEREXE" in a scanned letter) is what the query is
    after: as a full-text-only hit it kept a quarter of its score and ranked below the vector
    arm's nearest passages, which share no word with the query (tester, session 17)."""
    store = Store(str(db_path), create=True)
    store.ensure_vector_table("local", "test-model", DIM)
    filing, chunk_ids = D.write_documents(
        store,
        [
            paged_document(
                "file:///tmp/filing.pdf",
                [(page, text) for page, (text, _) in enumerate(EMBEDDED, 1)]
                + [(7, "The SLEREXE company letter, Holroyd Road, was typed in 1972.")],
            )
        ],
    )[0]
    vectors = [v for _, v in EMBEDDED] + [_unit(0.0, 0.0, 0.0, 0.0, 1.0)]  # far from the query
    D.add_vectors(store, [filing] * len(chunk_ids), chunk_ids, np.stack(vectors))
    D.mark_hybrid(store, [filing])
    letter = chunk_ids[-1]

    def ranked(query: str, ratio: float) -> list[str]:
        settings = SearchSettings(fusion="score", vector_pool=3, fts_only_share=0.25, dominant_ratio=ratio)
        return [r.chunk_id for r in search_chunks(store, query, query_vector=QUERY, limit=4, settings=settings)]

    assert ranked("slerexe", 0.0)[0] != letter  # the trap: below the vector arm's best
    assert ranked("slerexe", 1.5)[0] == letter  # its only hit
    # a word many passages share does not make a dominant hit: the share applies as before
    assert ranked("quokka", 1.5) == ranked("quokka", 0.0)
    store.close()


def test_the_dominant_hit_ratio_is_a_fusion_setting_on_by_default():
    assert FusionConfig().dominant_ratio == 1.5
    assert SearchSettings.from_config(load_config().search).dominant_ratio == 1.5
    assert FusionConfig(dominant_ratio=0).dominant_ratio == 0


def test_a_question_naming_a_rare_word_ranks_the_passage_that_holds_it(db_path):
    """"What does the SLEREXE company letter say?": a book's passages full of "company" and
    "letter" outscored, in full text, the one scanned letter that names SLEREXE, and that
    letter, which the vector arm did not return, kept a quarter of its score: it ranked below
    them all. A word the question writes with a capital, held by three passages at most, is
    what the question is after: those passages keep their whole full-text score."""
    store = Store(str(db_path), create=True)
    store.ensure_vector_table("local", "test-model", DIM)
    book = [(page, f"What does the company letter say? The company letter says what the letter says ({page}).") for page in range(1, 7)]
    letter = [(1, "SLEREXE Company Limited, Holroyd Road, Reading, Berkshire. Dear Dr. Cundall, we write about "
                  "the new telephone lines, the switchboard, the typewriters, the carbon copies, the filing "
                  "cabinets, the visitors' parking, the canteen hours and the fire drill on Thursday.")]
    noise = [(page, f"Harbour fees and ferry timetables for season {page}.") for page in range(1, 4)]
    written = D.write_documents(
        store,
        [
            paged_document("file:///tmp/book.pdf", book),
            paged_document("file:///tmp/letter.pdf", letter),
            paged_document("file:///tmp/harbour.pdf", noise),
        ],
    )
    (book_doc, book_ids), (letter_doc, [letter_id]), (noise_doc, noise_ids) = written
    # the vector arm's nearest passages share no word with the question (what a small
    # embedder returns for a name it has never seen)
    D.add_vectors(store, [book_doc] * len(book_ids), book_ids, np.stack([_unit(0.0, 0.0, 1.0)] * len(book_ids)))
    D.add_vectors(store, [letter_doc], [letter_id], np.stack([_unit(0.0, 0.0, 0.0, 1.0)]))
    D.add_vectors(store, [noise_doc] * 3, noise_ids, np.stack([_unit(1.0, 0.1 * i) for i in range(3)]))
    D.mark_hybrid(store, [book_doc, letter_doc, noise_doc])

    def ranked(ratio: float) -> list[str]:
        settings = SearchSettings(fusion="score", vector_pool=3, fts_only_share=0.25, dominant_ratio=ratio)
        found = search_chunks(store, "What does the SLEREXE company letter say?", query_vector=QUERY, limit=4, settings=settings)
        return [r.chunk_id for r in found]

    assert letter_id not in ranked(0.0)[:2]  # the trap
    assert letter_id in ranked(1.5)[:2]
    store.close()


def test_capitalised_names_leave_a_questions_first_word_and_question_words_aside():
    from haiku.rag.search.hybrid import _capitalised_names

    assert _capitalised_names("What does the SLEREXE company letter say?") == ["SLEREXE"]
    assert _capitalised_names("How far did the Rhone Glacier retreat?") == ["Rhone", "Glacier"]
    assert _capitalised_names("Which states had the most background checks?") == []
    assert _capitalised_names("TAM and perceived usefulness") == ["TAM"]
