"""Embedding servers that stall, drip or lie (issue 32): each request has a total deadline,
wrong vectors are refused and nothing wrong is stored as ``hybrid``, and a hybrid search whose
query cannot be embedded answers from full text with a notice.

The servers are real sockets on 127.0.0.1; a stalled server never answers, so a 1 s deadline
decides the outcome whatever the machine's speed."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from haiku.rag.client import HaikuRAG
from haiku.rag.embeddings import create_embedder
from haiku.rag.errors import EmbeddingError, StoreError

DIM = 8


class Mode:
    value = "good"


@pytest.fixture
def embed_server() -> Iterator[tuple[str, Mode]]:
    """An OpenAI-compatible embeddings server; ``mode.value`` says how it answers."""
    mode = Mode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = body["input"]
            if mode.value == "zero":
                vectors: Any = [[0.0] * DIM for _ in texts]
            elif mode.value == "overflow":
                vectors = [[1e39] * DIM for _ in texts]  # beyond float32
            elif mode.value == "nan":
                vectors = [[float("nan")] * DIM for _ in texts]
            else:
                vectors = [[float(len(t) % 7 + 1), *([1.0] * (DIM - 1))] for t in texts]
            raw = json.dumps({"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", mode
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


@pytest.fixture
def dripping_server() -> Iterator[str]:
    """Answers 200 with a body that never ends: one byte every 0.2 s (never a read timeout)."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000000")
            self.end_headers()
            try:
                while not stop.is_set():
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    stop.wait(0.2)
            except OSError:
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    stop.set()
    httpd.shutdown()
    httpd.server_close()


def _embedder(url: str, deadline: float = 1.0) -> Any:
    return create_embedder("openai-compatible", "m", base_url=url, vector_dim=DIM, request_deadline=deadline)


def test_a_server_that_never_answers_meets_the_total_deadline(silent_server):
    embedder = _embedder(silent_server)
    with pytest.raises(EmbeddingError, match=r"did not finish answering within 1 s \(embeddings.request_deadline\)"):
        embedder.embed_query("walrus")


def test_a_dripping_server_meets_the_total_deadline(dripping_server):
    # one byte every 0.2 s never trips a per-read timeout; only a total deadline ends this
    embedder = _embedder(dripping_server)
    with pytest.raises(EmbeddingError, match="did not finish answering within 1 s"):
        embedder.embed_documents(["walrus", "heron"])


@pytest.mark.parametrize(("mode", "message"), [("zero", "all zeros"), ("overflow", "overflowing"), ("nan", "NaN")])
def test_wrong_vectors_are_refused(embed_server, mode, message):
    url, state = embed_server
    state.value = mode
    with pytest.raises(EmbeddingError, match=message):
        _embedder(url).embed_documents(["walrus"])


async def test_the_store_refuses_wrong_vectors_whatever_the_embedder(db_path, config):
    from haiku.rag.store import documents as docs

    async with HaikuRAG(db_path, config, create=True) as client:
        document = await client.create_document("Walrus herds drift on the floes.", title="Walrus", embed=False)
        client.store.ensure_vector_table("test", "m", DIM)
        chunk_ids = [c.id for c in await client.get_chunks(document)]
        for wrong in (np.zeros((len(chunk_ids), DIM)), np.full((len(chunk_ids), DIM), np.nan)):
            with pytest.raises(StoreError, match="all-zero"):
                docs.add_vectors(client.store, [document] * len(chunk_ids), chunk_ids, wrong)
        assert client.store.table("chunk_vectors").count_rows() == 0


async def test_zero_vectors_leave_the_document_full_text_only(db_path, config, embed_server):
    url, state = embed_server
    config.embeddings.provider = "openai-compatible"
    config.embeddings.base_url = url
    config.embeddings.model = "m"
    config.embeddings.vector_dim = DIM
    async with HaikuRAG(db_path, config, create=True) as client:
        state.value = "zero"
        document = await client.create_document("Walrus herds drift on the floes.", title="Walrus", embed=False)
        with pytest.raises(EmbeddingError, match="all zeros"):
            await client.embed_pending([document])
        (stored,) = await client.list_documents()
        assert stored.index_state != "hybrid"
        # the same documents embed once the server is healthy again
        state.value = "good"
        assert await client.embed_pending() > 0
        (stored,) = await client.list_documents()
        assert stored.index_state == "hybrid"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_hybrid_search_answers_from_full_text_when_the_embedder_is_gone(db_path, config, embed_server):
    url, _ = embed_server
    config.embeddings.provider = "openai-compatible"
    config.embeddings.base_url = url
    config.embeddings.model = "m"
    config.embeddings.vector_dim = DIM
    async with HaikuRAG(db_path, config, create=True) as client:
        await client.create_document("Walrus herds drift on the floes near Svalbard.", title="Walrus")
        assert (await client.list_documents())[0].index_state == "hybrid"
    # the embedding server is unreachable: a hybrid search still answers, from full text, and says so
    config.embeddings.base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    async with HaikuRAG(db_path, config) as client:
        plain = await client.search("walrus floes")  # the default is hybrid
        assert plain and "Walrus herds" in plain[0].content
        notices: list[str] = []
        results = await client.search("walrus floes", search_type="hybrid", notices=notices)
        assert results and "Walrus herds" in results[0].content
        assert len(notices) == 1 and "full-text results only" in notices[0] and "cannot reach" in notices[0]
        with pytest.raises(EmbeddingError):
            await client.search("walrus floes", search_type="vector")
