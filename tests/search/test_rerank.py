"""The reranking stage: a /rerank server on 127.0.0.1 reorders a pool larger than the limit;
any failure of it keeps the fused order with a warning, and its key is never logged."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from json_server import json_server
from store.helpers import new_document

from haiku.rag.client import HaikuRAG
from haiku.rag.config import RerankConfig
from haiku.rag.search.hybrid import search_chunks
from haiku.rag.search.rerank import HttpReranker, RerankError, create_reranker, parse_results
from haiku.rag.store import documents as D

SECRET = "sk-rerank-test-0123456789"
# Many "quokka"s rank a chunk high in full text; the one with "golden" has one among padding
# and ranks last, but the test's reranker puts it first.
PARAGRAPHS = [("quokka " * (12 - i)) + f"filler paragraph {i}" for i in range(10)] + [
    "quokka golden " + "padding words " * 40
]


def score(document: str, index: int) -> float:
    """The test reranker: "golden" first, the rest in reverse of the order they were sent."""
    return 10.0 if "golden" in document else index / 100


@dataclass
class RerankServer:
    url: str = ""
    mode: str = "ok"  # ok | error | malformed
    requests: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def server() -> Iterator[RerankServer]:
    state = RerankServer()

    def answer(path: str, body: Any, headers: Any) -> tuple[int, Any]:
        state.requests.append({"path": path, "body": body, "auth": headers.get("Authorization")})
        if state.mode == "error":
            return 500, {"error": "model not loaded"}
        if state.mode == "malformed":
            return 200, {"results": [{"index": 999, "relevance_score": 1.0}]}
        # unsorted and ignoring top_n, as some servers do
        return 200, {"results": [{"index": i, "relevance_score": score(d, i)} for i, d in enumerate(body["documents"])]}

    with json_server(answer) as state.url:
        yield state


@pytest.fixture(autouse=True)
def _no_keychain(monkeypatch: pytest.MonkeyPatch) -> None:
    # the key comes from the environment here; the test machine's keychain stays out of it
    monkeypatch.setattr("haiku.rag.models.keychain_key", lambda user: None)


def _client(db_path, config, url: str, pool: int = 8) -> HaikuRAG:
    config.search.page_share = None  # the fixture's chunks share one page: rank chunks here
    config.search.rerank = RerankConfig(provider="http", base_url=url, model="bge-reranker", pool=pool)
    client = HaikuRAG(db_path, config, create=True)
    D.write_document(client.store, new_document(paragraphs=PARAGRAPHS))
    return client


def _fused(client: HaikuRAG, limit: int) -> list[str]:
    return [r.content for r in search_chunks(client.store, "quokka", query_vector=None, limit=limit)]


def test_a_configured_rerank_endpoint_reorders_a_pool_larger_than_the_limit(db_path, config, server, monkeypatch):
    monkeypatch.setenv("RERANK_API_KEY", SECRET)
    client = _client(db_path, config, server.url, pool=len(PARAGRAPHS))
    fused = _fused(client, 3)
    assert not any("golden" in text for text in fused), "precondition: fusion alone ranks it below the limit"

    results = client.search_sync("quokka", limit=3)

    [request] = server.requests
    assert request["path"] == "/v1/rerank"
    assert request["auth"] == f"Bearer {SECRET}"
    body = request["body"]
    assert body["model"] == "bge-reranker" and body["query"] == "quokka" and body["top_n"] == 3
    assert len(body["documents"]) == len(PARAGRAPHS) > 3, "the reranker sees the pool, not the cut"
    # the fused order is what it was sent, so its cut is the pool's head
    assert body["documents"][:3] == fused
    assert len(results) == 3
    assert "golden" in results[0].content
    docs = body["documents"]
    best = sorted(range(len(docs)), key=lambda i: -score(docs[i], i))[:3]
    assert [r.content for r in results] == [docs[i] for i in best]
    assert [r.score for r in results] == [score(docs[i], i) for i in best]
    client.close()


@pytest.mark.parametrize("mode", ["error", "malformed", "unreachable"])
def test_a_failing_reranker_keeps_the_fused_order_with_a_warning(db_path, config, server, monkeypatch, caplog, mode):
    monkeypatch.setenv("RERANK_API_KEY", SECRET)
    url = server.url
    if mode == "unreachable":
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    server.mode = mode
    client = _client(db_path, config, url)
    expected = _fused(client, 3)

    with caplog.at_level(logging.DEBUG, logger="haiku.rag"):
        results = client.search_sync("quokka", limit=3)

    assert [r.content for r in results] == expected
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings and "reranking failed, keeping the fused order" in warnings[0].getMessage()
    assert "RerankError" in warnings[0].getMessage()
    assert SECRET not in caplog.text
    client.close()


def test_a_misconfigured_reranker_does_not_fail_searches(db_path, config, monkeypatch, caplog):
    for name in ("COHERE_API_KEY", "CO_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    config.search.rerank = RerankConfig(provider="cohere")
    config.search.page_share = None
    client = HaikuRAG(db_path, config, create=True)
    D.write_document(client.store, new_document(paragraphs=PARAGRAPHS))
    with caplog.at_level(logging.WARNING, logger="haiku.rag"):
        results = client.search_sync("quokka", limit=3)
    assert [r.content for r in results] == _fused(client, 3)
    assert "reranking is off for this search" in caplog.text and "needs an API key" in caplog.text
    client.close()


def test_reranking_is_off_by_default_and_sends_nothing(db_path, config, server):
    assert config.search.rerank.provider == "none"
    config.search.page_share = None
    client = HaikuRAG(db_path, config, create=True)
    D.write_document(client.store, new_document(paragraphs=PARAGRAPHS))
    assert client.reranker is None
    assert [r.content for r in client.search_sync("quokka", limit=3)] == _fused(client, 3)
    assert server.requests == []
    client.close()


def test_answers_are_validated_and_ordered_best_first() -> None:
    body = {"results": [{"index": 0, "relevance_score": 0.1}, {"index": 2, "relevance_score": 0.9}]}
    assert parse_results(body, 3, 5, "x") == [(2, 0.9), (0, 0.1)]
    assert parse_results(body, 3, 1, "x") == [(2, 0.9)]
    for bad in (
        {},
        {"results": [{"index": 3, "relevance_score": 1}]},
        {"results": [{"index": True, "relevance_score": 1}]},
        {"results": [{"index": 0, "relevance_score": "high"}]},
        {"results": [{"index": 0, "relevance_score": float("nan")}]},
        {"results": [{"index": 0, "relevance_score": 1}, {"index": 0, "relevance_score": 2}]},
    ):
        with pytest.raises(RerankError, match="malformed answer from x"):
            parse_results(bad, 3, 5, "x")


def test_providers_need_what_they_need(monkeypatch) -> None:
    for name in ("COHERE_API_KEY", "CO_API_KEY", "JINA_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert create_reranker(RerankConfig()) is None
    with pytest.raises(ValueError, match="base_url must be set"):
        create_reranker(RerankConfig(provider="http"))
    with pytest.raises(ValueError, match="needs an API key"):
        create_reranker(RerankConfig(provider="cohere"))
    monkeypatch.setenv("JINA_API_KEY", SECRET)
    jina = create_reranker(RerankConfig(provider="jina"))
    assert isinstance(jina, HttpReranker)
    assert jina.url == "https://api.jina.ai/v1/rerank" and jina.model == "jina-reranker-v2-base-multilingual"
    assert SECRET not in jina.description
    jina.close()


def test_with_pages_grouped_the_reranker_sees_chunks_and_each_page_comes_once(db_path, config, server, monkeypatch):
    from search.paged import paged_document

    monkeypatch.setenv("RERANK_API_KEY", SECRET)
    config.search.rerank = RerankConfig(provider="http", base_url=server.url, model="bge-reranker", pool=8)
    config.search.page_share = 0.0
    client = HaikuRAG(db_path, config, create=True)
    pages = [(1, "quokka quokka quokka quokka first page lead"), (2, "quokka quokka quokka second page"),
             (1, "quokka golden " + "padding words " * 40), (3, "quokka third page")]
    D.write_document(client.store, paged_document("file:///tmp/notes.pdf", pages))
    try:
        results = client.search_sync("quokka", limit=3)
        # "golden" is the page-1 chunk full text ranks last; the reranker puts it first, and page
        # 1's other chunk (full text's best) no longer comes back as a second page-1 result
        assert [r.page_numbers for r in results] == [[1], [3], [2]]
        assert "golden" in results[0].content
        assert len(server.requests[0]["body"]["documents"]) == 4  # chunks, not pages, were sent
    finally:
        client.close()
