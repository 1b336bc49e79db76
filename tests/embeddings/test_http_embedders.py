"""HTTP embedders against a small real HTTP server on 127.0.0.1 (no mocks of httpx)."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"

import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from haiku.rag.embeddings import EmbedderIdentity, create_embedder
from haiku.rag.embeddings.http import OllamaEmbedder, OpenAICompatibleEmbedder
from haiku.rag.errors import EmbeddingError, OperationCancelled
from haiku.rag.operations import CancelToken, Progress

DIM = 8
API_KEY = "sk-test-secret-123"


def raw_vector(text: str, dim: int = DIM) -> list[float]:
    """A deterministic, deliberately unnormalised vector for ``text``."""
    digest = hashlib.sha256(text.encode()).digest()
    return [float(b) - 100.0 for b in digest[:dim]]


def unit(vector: list[float]) -> np.ndarray:
    array = np.array(vector, dtype=np.float32)
    return array / np.linalg.norm(array)


@dataclass
class FakeServer:
    """What the test server received, and how it should answer next."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    # (status, body) to send instead of embeddings, or None for well-formed answers
    override: tuple[int, Any] | None = None
    dim: int = DIM


@pytest.fixture
def server() -> Iterator[FakeServer]:
    state = FakeServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            if state.override is not None:
                self._send(*state.override)
            elif self.path == "/api/embed":
                vectors = [raw_vector(t, state.dim) for t in body["input"]]
                self._send(200, {"model": body["model"], "embeddings": vectors})
            elif self.path == "/v1/embeddings":
                data = [
                    {"object": "embedding", "index": i, "embedding": raw_vector(t, state.dim)}
                    for i, t in enumerate(body["input"])
                ]
                # the OpenAI format does not promise order: 'index' does
                self._send(200, {"object": "list", "data": data[::-1], "model": body["model"]})
            else:
                self._send(404, {"error": "no such endpoint"})

        def _send(self, status: int, payload: Any) -> None:
            raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


TEXTS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def test_ollama_batches_requests_and_normalises(server: FakeServer) -> None:
    embedder = OllamaEmbedder("nomic-embed-text", base_url=server.url, batch_size=2)
    reports: list[Progress] = []
    vectors = embedder.embed_documents(TEXTS, progress=reports.append)

    assert [r["path"] for r in server.requests] == ["/api/embed"] * 3
    assert [r["body"] for r in server.requests] == [
        {"model": "nomic-embed-text", "input": ["alpha", "beta"], "truncate": True},
        {"model": "nomic-embed-text", "input": ["gamma", "delta"], "truncate": True},
        {"model": "nomic-embed-text", "input": ["epsilon"], "truncate": True},
    ]
    assert vectors.shape == (5, DIM) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, np.stack([unit(raw_vector(t)) for t in TEXTS]), atol=1e-6)
    assert [(r.done, r.total) for r in reports] == [(2, 5), (4, 5), (5, 5)]
    assert embedder.identity == EmbedderIdentity("ollama", "nomic-embed-text", DIM)


def test_openai_compatible_sends_key_and_dimensions_and_restores_order(server: FakeServer) -> None:
    embedder = create_embedder(
        "openai-compatible",
        "text-embedder",
        base_url=server.url + "/v1",
        api_key=API_KEY,
        vector_dim=DIM,
        batch_size=10,
    )
    vectors = embedder.embed_documents(TEXTS)

    (request,) = server.requests
    assert request["path"] == "/v1/embeddings"
    assert request["headers"]["Authorization"] == f"Bearer {API_KEY}"
    assert request["body"] == {
        "model": "text-embedder",
        "input": TEXTS,
        "encoding_format": "float",
        "dimensions": DIM,
    }
    np.testing.assert_allclose(vectors, np.stack([unit(raw_vector(t)) for t in TEXTS]), atol=1e-6)


def test_dimension_is_probed_when_not_configured(server: FakeServer) -> None:
    embedder = OpenAICompatibleEmbedder("m", base_url=server.url + "/v1")
    assert embedder.identity == EmbedderIdentity("openai-compatible", "m", DIM)
    assert len(server.requests) == 1
    assert "dimensions" not in server.requests[0]["body"]
    assert "Authorization" not in server.requests[0]["headers"]


def test_query_embeddings_are_cached(server: FakeServer) -> None:
    embedder = OllamaEmbedder("m", base_url=server.url)
    first = embedder.embed_query("what is rag?")
    second = embedder.embed_query("what is rag?")
    np.testing.assert_array_equal(first, second)
    assert len(server.requests) == 1
    assert first.shape == (DIM,)


def test_connection_refused_says_ollama_is_not_running() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    embedder = OllamaEmbedder("m", base_url=url)
    with pytest.raises(EmbeddingError, match=f"cannot reach Ollama at {url}: is it running\\?"):
        embedder.embed_query("hello")


def test_connection_refused_for_openai_compatible_names_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    embedder = OpenAICompatibleEmbedder("m", base_url=url, api_key=API_KEY)
    with pytest.raises(EmbeddingError, match="cannot reach the embedding server at") as error:
        embedder.embed_query("hello")
    assert API_KEY not in str(error.value)


def test_http_errors_carry_status_and_body_excerpt(server: FakeServer) -> None:
    server.override = (404, {"error": "model 'nope' not found, try pulling it first"})
    embedder = OllamaEmbedder("nope", base_url=server.url)
    with pytest.raises(EmbeddingError, match="HTTP 404") as error:
        embedder.embed_query("hello")
    assert "model 'nope' not found" in str(error.value)


def test_http_errors_never_reveal_the_api_key(server: FakeServer) -> None:
    server.override = (401, {"error": {"message": "Incorrect API key provided"}})
    embedder = OpenAICompatibleEmbedder("m", base_url=server.url + "/v1", api_key=API_KEY)
    with pytest.raises(EmbeddingError, match="HTTP 401") as error:
        embedder.embed_query("hello")
    assert API_KEY not in str(error.value)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"nothing": []}, "no 'embeddings' field"),
        ({"embeddings": [[1.0, 2.0]]}, "expected 2 vectors, got 1 vectors"),
        ({"embeddings": [[1.0, 2.0], [1.0]]}, "not lists of numbers of one length"),
        ({"embeddings": [["a", "b"], ["c", "d"]]}, "not lists of numbers of one length"),
        (b"<html>proxy error</html>", "not JSON"),
    ],
)
def test_malformed_responses_are_reported(server: FakeServer, payload: Any, message: str) -> None:
    server.override = (200, payload)
    embedder = OllamaEmbedder("m", base_url=server.url)
    with pytest.raises(EmbeddingError, match=message):
        embedder.embed_documents(["one", "two"])


def test_openai_response_without_data_is_malformed(server: FakeServer) -> None:
    server.override = (200, {"object": "list"})
    embedder = OpenAICompatibleEmbedder("m", base_url=server.url + "/v1")
    with pytest.raises(EmbeddingError, match="malformed embedding response.*no 'data' list"):
        embedder.embed_query("hello")


def test_wrong_dimension_is_refused(server: FakeServer) -> None:
    embedder = OllamaEmbedder("m", base_url=server.url, vector_dim=16)
    with pytest.raises(
        EmbeddingError, match="returned 8-dimensional vectors, but 16 were expected"
    ):
        embedder.embed_query("hello")


def test_dimension_change_between_batches_is_refused(server: FakeServer) -> None:
    embedder = OllamaEmbedder("m", base_url=server.url, batch_size=2)
    embedder.embed_query("first")  # detects 8
    server.dim = 4
    with pytest.raises(EmbeddingError, match="returned 4-dimensional vectors, but 8"):
        embedder.embed_documents(TEXTS)


def test_cancellation_stops_between_requests(server: FakeServer) -> None:
    token = CancelToken()
    embedder = OllamaEmbedder("m", base_url=server.url, batch_size=2)
    with pytest.raises(OperationCancelled):
        embedder.embed_documents(TEXTS, progress=lambda _: token.cancel(), cancel=token)
    assert len(server.requests) == 1


def test_openai_provider_needs_a_key_and_defaults_to_openai(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="needs an API key"):
        create_embedder("openai")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    embedder = create_embedder("openai", vector_dim=1536)
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder.base_url == "https://api.openai.com/v1"
    assert embedder.identity == EmbedderIdentity("openai", "text-embedding-3-small", 1536)


def test_http_providers_need_their_settings() -> None:
    with pytest.raises(ValueError, match="'ollama' embedder needs a model name"):
        create_embedder("ollama")
    with pytest.raises(ValueError, match="needs a base_url"):
        create_embedder("openai-compatible", "m")
