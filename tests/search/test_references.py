"""Reference lists are demoted in search, not removed: a paper's own passage on a topic ranks
above its bibliography's titles on that topic, the bibliography still answers what only it
holds and what asks for it. Real PDFs (tests/pdf_factory.py), real pipeline and LanceDB, the
default embedder and search settings."""

from __future__ import annotations

import numpy as np
import pdf_factory
import pytest
from search.paged import paged_document

from haiku.rag.client import HaikuRAG
from haiku.rag.search.hybrid import SearchSettings, search_chunks
from haiku.rag.search.references import (
    asks_for_references,
    is_reference_chunk,
    is_reference_heading,
    looks_like_references,
)
from haiku.rag.store import documents as D
from haiku.rag.store.engine import Store

_NOUNS = "harbour orchard valley ledger window garden meadow kettle shelter willow market lantern".split()
_ADJECTIVES = "quiet early narrow bright careful steady open modest".split()


def filler(seed: int, sentences: int = 5) -> str:
    """Neutral prose (function words and all, as a paper's), none of the queries' words."""
    out = []
    for k in range(sentences):
        n = [_NOUNS[(seed * 5 + k * 3 + j) % len(_NOUNS)] for j in range(3)]
        a = [_ADJECTIVES[(seed + k + j) % len(_ADJECTIVES)] for j in range(2)]
        out.append(
            f"The {n[0]} of the {n[1]} was {a[0]} in that year, and it was also {a[1]} for the "
            f"{n[2]} that we have described in this section."
        )
    return " ".join(out)


BODY = (
    "We estimated quokka burrow density on the western dunes by counting active entrances along "
    "twelve transects each spring."
)
ENTRIES = [
    "[1] Smith, A. B., and Jones, C. (2019). Quokka burrow density and dune stability. Journal of Island Ecology, 3(2), 1-10.",
    "[2] Brown, D. (2017). Estimating quokka burrow density from aerial surveys. Wildlife Research, 44(5), 301-312.",
    "[3] Lee, K., and Park, S. (2020). Seasonal change in quokka burrow density. Australian Mammalogy, 42(1), 15-27.",
    "[4] Taylor, R. (2016). Quokka burrow density after fire. Fire Ecology, 12(3), 88-97. doi:10.1000/fe.2016.88",
    "[5] Nguyen, T., and White, P. (2021). Burrow density of the quokka on two islands. Oryx, 55(4), 610-618.",
    "[6] Clark, H. (2018). Quokka density, burrow reuse and predators. In Proceedings of the Marsupial Society, pp. 40-49.",
    "[7] Garcia, M. (2015). Wombat tunnelling acoustics. Burrow Science, 7(1), 55-60.",
    "[8] Evans, L. (2014). Mapping quokka burrow density with drones. Remote Sensing in Ecology, 2(2), 101-110.",
]
TOPIC = "quokka burrow density"


async def _library(config, db_path, pdf) -> HaikuRAG:
    client = HaikuRAG(db_path, config, create=True)
    try:
        outcome = await client.ingest_file(pdf)
        assert outcome.status == "ingested", outcome.reason
    except BaseException:
        client.close()
        raise
    return client


async def _paper(tmp_path, config, db_path, *, headings: bool = True) -> HaikuRAG:
    sections: list[tuple[str | None, list[str]]] = [
        ("1 Introduction" if headings else None, [filler(1), filler(2)]),
        ("2 Methods" if headings else None, [BODY, filler(3, 2)]),
        ("3 Discussion" if headings else None, [filler(4), filler(5), filler(6)]),
        ("References" if headings else None, ENTRIES),
    ]
    pdf = tmp_path / "paper.pdf"
    # the reference list on a page of its own, as papers print it: search returns each page once
    pdf_factory.make_sectioned_pdf(pdf, title="Burrow Ecology of Island Marsupials", sections=sections, new_pages=[3])
    return await _library(config, db_path, pdf)


def _references(results) -> list[bool]:
    return [is_reference_chunk(r.headings, r.content) for r in results]


async def test_the_papers_own_passage_ranks_above_its_reference_list(tmp_path, config, db_path):
    async with await _paper(tmp_path, config, db_path) as client:
        results = await client.search(TOPIC, limit=5)
        assert "quokka burrow density on the western dunes" in results[0].content
        assert results[0].headings[-1] == "2 Methods"
        # demoted, not removed: the reference list is still among the results
        assert any(r.headings[-1:] == ["References"] for r in results[1:])
        # the plain fusion ranks the reference list first (what this guards against)
        config.search.reference_weight = 1.0
        plain = await client.search(TOPIC, limit=5)
        assert plain[0].headings[-1:] == ["References"]


async def test_what_only_the_reference_list_holds_is_still_found_first(tmp_path, config, db_path):
    async with await _paper(tmp_path, config, db_path) as client:
        only_there = await client.search("wombat tunnelling acoustics", limit=5)
        assert "Wombat tunnelling acoustics" in only_there[0].content
        assert only_there[0].headings[-1:] == ["References"]
        assert _references(await client.search(TOPIC, limit=5))[0] is False  # the topic is demoted


async def test_a_query_asking_for_the_references_is_not_demoted(tmp_path, config, db_path):
    async with await _paper(tmp_path, config, db_path) as client:
        for query in (f"references on {TOPIC}", f"{TOPIC} bibliography", f"Smith et al. {TOPIC}"):
            assert (await client.search(query, limit=5))[0].headings[-1:] == ["References"], query
        assert (await client.search(TOPIC, limit=5))[0].headings[-1] == "2 Methods"


async def test_reference_entries_without_a_heading_are_demoted(tmp_path, config, db_path):
    async with await _paper(tmp_path, config, db_path, headings=False) as client:
        results = await client.search(TOPIC, limit=5)
        assert not any(is_reference_heading(h) for r in results for h in r.headings)
        # the chunk of entries only (judged by its text) is no longer first, but still returned;
        # without headings the chunker joins the discussion's end and the first entries, and
        # that chunk (mostly prose) is not judged a reference list
        judged = _references(results)
        assert judged[0] is False and True in judged
        assert any("quokka burrow density on the western dunes" in r.content for r in results)
        config.search.reference_weight = 1.0
        assert _references(await client.search(TOPIC, limit=5))[0] is True


async def test_a_french_references_section_is_demoted(tmp_path, config, db_path):
    entries = [
        "Dupont, J., et Martin, P. (2018). Densité des terriers de quokkas sur les dunes. Revue d'écologie insulaire, 12(3), 45-60.",
        "Bernard, L. (2016). La densité des terriers de quokkas après les incendies. Mammalia, 80(2), 101-112.",
        "Moreau, C., et Petit, A. (2020). Terriers de quokkas : densité et saisons. Écologie des îles, 5(1), 10-22.",
        "Leroy, S. (2019). Mesurer la densité des terriers de quokkas par drone. Télédétection, 8(4), 300-311.",
        "Roux, D. (2015). Densité des terriers de quokkas et prédateurs. Comptes rendus de biologie, pp. 55-63.",
    ]
    sections: list[tuple[str | None, list[str]]] = [
        ("1 Introduction", ["Les îles abritent des colonies anciennes et peu étudiées. " + filler(7)]),
        ("2 Méthodes", ["Nous avons mesuré la densité des terriers de quokkas sur les dunes de l'ouest chaque printemps."]),
        ("3 Discussion", [filler(8), filler(9)]),
        ("Références", entries),
    ]
    pdf = tmp_path / "article.pdf"
    pdf_factory.make_sectioned_pdf(pdf, title="Écologie des terriers insulaires", sections=sections, new_pages=[3])
    async with await _library(config, db_path, pdf) as client:
        query = "densité des terriers de quokkas"
        results = await client.search(query, limit=5)
        assert results[0].headings[-1] == "2 Méthodes"
        assert any(r.headings[-1:] == ["Références"] for r in results)
        config.search.reference_weight = 1.0
        assert (await client.search(query, limit=5))[0].headings[-1:] == ["Références"]


@pytest.mark.parametrize(
    "heading",
    [
        "References", "REFERENCES", "7. References", "VII. REFERENCES", "Reference List", "Works Cited",
        "Literature Cited", "Bibliography", "Sources", "Références", "Références bibliographiques",
        "Bibliographie", "Literatur", "Literaturverzeichnis", "Referencias", "Bibliografía",
        "Riferimenti bibliografici", "Referências", "Literatuur", "Literatuurlijst", "References:",
    ],
)
def test_reference_section_names(heading):
    assert is_reference_heading(heading)


@pytest.mark.parametrize(
    "heading",
    ["Related Work", "Referencing styles in practice", "Data sources and methods", "Notes", "Introduction", ""],
)
def test_other_section_names(heading):
    assert not is_reference_heading(heading)


def test_reference_entries_are_told_from_prose_that_cites():
    assert looks_like_references(" ".join(ENTRIES))
    acl = (
        "Akari Asai, Kazuma Hashimoto, Hannaneh Hajishirzi, Richard Socher, and Caiming Xiong. 2020. "
        "Learning to retrieve reasoning paths over Wikipedia graph for question answering. In ICLR. "
        "Matt Deeds, Nicole Hamilton, and Greg Hullender. 2005. Learning to rank using gradient descent. "
        "In Proceedings of the 22nd International Conference on Machine Learning, pages 89-96."
    )
    assert looks_like_references(acl)
    cites = (
        "Passage retrieval has been an important component for open-domain QA (Voorhees, 1999). It not "
        "only reduces the search space for answer extraction, but also identifies the support context "
        "for users to verify the answer (Chen et al., 2017; Yang et al., 2019; Lee et al., 2019)."
    )
    assert not looks_like_references(cites)
    signatures = "/s/ ALAN B. GRAF, JR. Alan B. Graf, Jr. Director July 20, 2023 /s/ MARIA HENRY Maria Henry, Director"
    assert not looks_like_references(signatures)
    table = "| Year | Revenue | Margin |\n|-|-|-|\n| 2019 | 1,204 (3) | 12 |\n| 2020 | 1,355 (4) | 13 |"
    assert not looks_like_references(table)


def test_queries_asking_for_references():
    for query in ("references on dense retrieval", "bibliography", "which works are cited",
                  "Karpukhin et al. 2020", "10.1145/3397271.3401075", 'find "Learning to rank using gradient descent"',
                  "Literaturverzeichnis Geometrie", "références"):
        assert asks_for_references(query), query
    for query in ("retrieval augmented generation evaluation", "budget allocation", 'the "TAM" model',
                  "what sources of error did the study report"):
        assert not asks_for_references(query), query


# --- the ranking step itself, with chosen vectors ------------------------------------------------


def _unit(*weights: float) -> np.ndarray:
    vector = np.zeros(8, dtype=np.float32)
    vector[: len(weights)] = weights
    return vector / np.linalg.norm(vector)


ENTRY_TEXT = " ".join(ENTRIES[:4])


def _store(db_path, chunks: list[tuple[list[str], str, np.ndarray]]) -> tuple[Store, list[str]]:
    """One paged document of (headings, text, vector) chunks, one page each."""
    store = Store(str(db_path), create=True)
    store.ensure_vector_table("local", "test-model", 8)
    document = paged_document("file:///tmp/paper.pdf", [(n + 1, text) for n, (_, text, _) in enumerate(chunks)])
    for record, (headings, _, _) in zip(document.chunks, chunks, strict=True):
        record.headings = headings
    [(stored, chunk_ids)] = D.write_documents(store, [document])
    D.add_vectors(store, [stored] * len(chunk_ids), chunk_ids, np.stack([v for _, _, v in chunks]))
    D.mark_hybrid(store, [stored])
    return store, chunk_ids


SETTINGS = SearchSettings(fusion="score", fts_only_share=0.25, page_share=0.0, reference_weight=0.5)


@pytest.mark.parametrize("page_share", [0.0, None])
def test_the_reference_list_keeps_its_place_when_no_other_passage_has_the_words(db_path, page_share):
    # the query's words are only in the reference list; in meaning the query is nearer a body
    # passage (fused: references 1 + 0.5, body 0 + 1): demoted, the list would fall below it
    query = _unit(1.0)
    store, ids = _store(
        db_path,
        [
            (["References"], ENTRY_TEXT, _unit(1.0, 1.7)),
            (["2 Methods"], "We counted the entrances along twelve transects each spring.", query),
            (["3 Discussion"], "The harbour ledger was quiet in that year.", _unit(0.0, 1.0)),
        ],
    )
    settings = SearchSettings(**{**SETTINGS.__dict__, "page_share": page_share})
    found = search_chunks(store, "Quokka burrow density", query_vector=query, limit=3, settings=settings)
    assert found[0].chunk_id == ids[0]
    store.close()


def _list_methods_discussion(path):
    """A reference list full of the query's words, a Methods passage that has them too, and
    an unrelated discussion; the list nearest the query in meaning after Methods."""
    return _store(
        path,
        [
            (["References"], ENTRY_TEXT, _unit(1.0, 0.5)),
            (["2 Methods"], "We estimated quokka burrow density along twelve transects. " + filler(1), _unit(1.0, 0.1)),
            (["3 Discussion"], "The harbour ledger was quiet in that year.", _unit(0.0, 1.0)),
        ],
    )


def test_a_reference_list_is_demoted_below_a_passage_that_also_has_the_words(tmp_path):
    query = _unit(1.0)
    store, ids = _list_methods_discussion(tmp_path / "lib.lancedb")
    plain = search_chunks(store, "quokka burrow density", query_vector=query, limit=3,
                          settings=SearchSettings(**{**SETTINGS.__dict__, "reference_weight": 1.0}))
    assert plain[0].chunk_id == ids[0]  # full text and meaning both favour the list
    demoted = search_chunks(store, "quokka burrow density", query_vector=query, limit=3, settings=SETTINGS)
    assert [r.chunk_id for r in demoted[:2]] == [ids[1], ids[0]]
    assert demoted[1].score == pytest.approx(plain[0].score * 0.5)
    # full text alone and vectors alone: the list keeps half its own score there too
    for search_type in ("fts", "vector"):
        scores = {}
        for weight in (1.0, 0.5):
            settings = SearchSettings(**{**SETTINGS.__dict__, "reference_weight": weight})
            found = search_chunks(store, "quokka burrow density", query_vector=query, search_type=search_type,
                                  limit=3, settings=settings)
            scores[weight] = {r.chunk_id: r.score for r in found}
        assert scores[0.5][ids[0]] == pytest.approx(scores[1.0][ids[0]] * 0.5), search_type
        assert scores[0.5][ids[1]] == pytest.approx(scores[1.0][ids[1]]), search_type
    store.close()


@pytest.mark.parametrize("page_share", [0.0, None])
def test_a_rerankers_scores_are_demoted_as_the_fused_ones(tmp_path, monkeypatch, page_share):
    from json_server import json_server

    from haiku.rag.config import RerankConfig
    from haiku.rag.search.rerank import create_reranker

    monkeypatch.setattr("haiku.rag.models.keychain_key", lambda user: None)
    query = _unit(1.0)
    store, ids = _list_methods_discussion(tmp_path / "lib.lancedb")

    def answer(path, body, headers):  # a reranker that likes the reference list best
        scores = [0.9 if "Smith, A. B." in d else 0.6 if "transects" in d else 0.1 for d in body["documents"]]
        return 200, {"results": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]}

    with json_server(answer) as url:
        reranker = create_reranker(RerankConfig(provider="http", base_url=url))
        settings = {w: SearchSettings(**{**SETTINGS.__dict__, "page_share": page_share, "reference_weight": w}) for w in (1.0, 0.5)}
        plain = search_chunks(store, "quokka burrow density", query_vector=query, limit=2, settings=settings[1.0], reranker=reranker)
        assert [r.chunk_id for r in plain] == [ids[0], ids[1]] and plain[0].score == pytest.approx(0.9)
        found = search_chunks(store, "quokka burrow density", query_vector=query, limit=2, settings=settings[0.5], reranker=reranker)
        assert [r.chunk_id for r in found] == [ids[1], ids[0]]
        assert [r.score for r in found] == pytest.approx([0.6, 0.45])
        # a query asking for the references keeps the reranker's order
        asking = search_chunks(store, "quokka burrow density references", query_vector=query, limit=2,
                               settings=settings[0.5], reranker=reranker)
        assert asking[0].chunk_id == ids[0]
    store.close()


def test_the_setting_is_read_from_yaml_and_the_environment_and_checked(tmp_path, monkeypatch):
    from haiku.rag.config import load_config
    from haiku.rag.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    assert load_config().search.reference_weight == 0.5  # on by default
    (tmp_path / "c.yaml").write_text("version: 1\nsearch:\n  reference_weight: 1\n")
    assert load_config(tmp_path / "c.yaml").search.reference_weight == 1.0
    monkeypatch.setenv("HAIKU_RAG_SEARCH__REFERENCE_WEIGHT", "0.25")
    assert load_config().search.reference_weight == 0.25
    monkeypatch.setenv("HAIKU_RAG_SEARCH__REFERENCE_WEIGHT", "1.5")
    with pytest.raises(ConfigError, match="search.reference_weight"):
        load_config()


@pytest.mark.parametrize(
    "entries",
    [
        # IEEE
        '[1] A. Smith, B. Jones, and C. Lee, "Deep learning for retrieval," in Proc. IEEE Conf. Computer '
        'Vision, 2019, pp. 1-10. [2] D. Brown, "Sparse indexes," IEEE Trans. Inf. Theory, vol. 12, no. 3, '
        'pp. 45-67, 2018. [3] E. White and F. Green, "Dense passage search," arXiv preprint arXiv:2004.04906, 2020.',
        # Vancouver
        "1. Smith J, Doe A. Burrow density in quokkas. J Mammal. 2019;12(3):45-67. 2. Brown D, Lee K. Island "
        "ecology of marsupials. Oryx. 2018;52(1):10-22. 3. White E. Fire and burrows. Aust Mammal. 2020;42:15-27.",
        # Chicago author-date
        "Smith, John. 2019. The Island Quokka. Oxford: Oxford University Press. Brown, Dana, and Kim Lee. 2018. "
        '"Burrows and Fire." Journal of Island Ecology 3 (2): 1-10. White, Emma. 2020. Marsupials of the West. London: Penguin.',
        # MLA
        'Smith, John. The Island Quokka. Oxford University Press, 2019. Brown, Dana, and Kim Lee. "Burrows and '
        'Fire." Journal of Island Ecology, vol. 3, no. 2, 2018, pp. 1-10. White, Emma. Marsupials of the West. Penguin, 2020.',
        # German Harvard
        "Müller, H. (2010): Geometrie und Topologie. Berlin: Springer. Schmidt, A.; Weber, K. (2015): "
        "Überlagerungen. In: Mathematische Annalen 12, S. 45-67. Fischer, G. (2001): Lineare Algebra. Wiesbaden: Vieweg.",
    ],
    ids=["ieee", "vancouver", "chicago", "mla", "german-harvard"],
)
def test_citation_styles_are_recognised_as_entries(entries):
    assert looks_like_references(entries)
