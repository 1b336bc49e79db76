"""Embedders served over HTTP: Ollama's native API and the OpenAI embeddings wire format.

Texts go out in batches of ``batch_size`` per request. Vectors are L2-normalised here whatever
the server does, and their dimension is checked against ``vector_dim`` (or against the first
response when ``vector_dim`` is not configured). API keys travel only in the Authorization
header and never appear in messages or logs.

Every request has a total deadline (``request_deadline``, default 300 s) on top of httpx's
per-read timeout: a server that drips one byte every 50 s never trips a per-read timeout, but it
trips this one, and the caller gets an ``EmbeddingError`` on time. A response body is bounded
(``MAX_RESPONSE_BYTES``), and every vector must be finite with a non-zero length: a server that
answers zeros, NaN or overflowing numbers is refused, so nothing wrong is stored as ``hybrid``.
"""

from __future__ import annotations

import json
import threading
import time
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from haiku.rag.embeddings.base import CachingEmbedder, EmbedderIdentity, QueryCache, l2_normalised
from haiku.rag.errors import EmbeddingError
from haiku.rag.operations import (
    CancelToken,
    Progress,
    ProgressCallback,
    Stage,
    check_cancelled,
    report,
)

DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT_SECONDS = 120.0  # per read (httpx)
DEFAULT_REQUEST_DEADLINE_SECONDS = 300.0  # per request, in total
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
DEFAULT_BATCH_SIZE = 32
_BODY_EXCERPT_CHARS = 300


class HttpEmbedder(CachingEmbedder):
    """Batching, normalisation, dimension checks and error messages shared by HTTP providers."""

    #: how the server is named in messages, e.g. "Ollama"
    server_name: str

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        model: str,
        vector_dim: int | None,
        batch_size: int,
        timeout: float,
        headers: dict[str, str] | None = None,
        query_cache_size: int = 512,
        request_deadline: float = DEFAULT_REQUEST_DEADLINE_SECONDS,
    ) -> None:
        if not model:
            raise ValueError(f"the {provider!r} embedder needs a model name")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if vector_dim is not None and vector_dim < 1:
            raise ValueError(f"vector_dim must be at least 1, not {vector_dim}")
        self._provider = provider
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._vector_dim = vector_dim
        self._batch_size = batch_size
        if request_deadline <= 0:
            raise ValueError(f"request_deadline must be positive, not {request_deadline}")
        self._timeout = min(timeout, request_deadline)
        self._deadline = request_deadline
        self._client = httpx.Client(timeout=self._timeout, headers=headers)
        self._query_cache = QueryCache(query_cache_size)
        self._dim_lock = threading.Lock()

    @property
    def identity(self) -> EmbedderIdentity:
        """Sends one short request when the dimension is neither configured nor seen yet."""
        vector_dim = self._vector_dim
        if vector_dim is None:
            vector_dim = len(self.embed_query("dimension probe"))
        return EmbedderIdentity(self._provider, self.model, vector_dim)

    def embed_documents(
        self,
        texts: Sequence[str],
        *,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> np.ndarray:
        texts = list(texts)
        batches: list[np.ndarray] = []
        for start in range(0, len(texts), self._batch_size):
            check_cancelled(cancel)
            batch = texts[start : start + self._batch_size]
            batches.append(self._checked(self._request_vectors(batch), len(batch)))
            report(progress, Progress(Stage.EMBEDDING, done=start + len(batch), total=len(texts)))
        if not batches:
            return np.empty((0, self._vector_dim or 0), dtype=np.float32)
        return np.concatenate(batches)

    def close(self) -> None:
        self._client.close()

    @abstractmethod
    def _request_vectors(self, texts: list[str]) -> Any:
        """The raw vectors the server returned for ``texts``, in the same order."""

    def _post(self, url: str, payload: dict[str, Any]) -> Any:
        """The JSON body of one POST, within the total deadline. The request runs on its own
        thread; past the deadline the caller gets an error at once and the thread, left
        behind, stops at its next read (it checks the deadline between reads) or at the
        per-read timeout."""
        ends = time.monotonic() + self._deadline
        outcome: dict[str, Any] = {}
        finished = threading.Event()

        def run() -> None:
            try:
                outcome["body"] = self._post_within(url, payload, ends)
            except BaseException as exc:  # handed to the caller below
                outcome["error"] = exc
            finally:
                finished.set()

        threading.Thread(target=run, name="haiku-embedding-request", daemon=True).start()
        if not finished.wait(self._deadline):
            raise EmbeddingError(self._late_message())
        if "error" in outcome:
            raise outcome["error"]
        return outcome["body"]

    def _late_message(self) -> str:
        return (
            f"{self.server_name} at {self.base_url} did not finish answering within {self._deadline:g} s "
            "(embeddings.request_deadline); it is stalled or overloaded"
        )

    def _post_within(self, url: str, payload: dict[str, Any], ends: float) -> Any:
        try:
            with self._client.stream("POST", url, json=payload) as response:
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if time.monotonic() > ends:
                        raise EmbeddingError(self._late_message())
                    if len(body) > MAX_RESPONSE_BYTES:
                        raise self._malformed(f"the answer is larger than {MAX_RESPONSE_BYTES // 2**20} MiB")
        except httpx.ConnectError as exc:
            raise EmbeddingError(self._unreachable_message(exc)) from exc
        except httpx.TimeoutException as exc:
            if time.monotonic() >= ends:  # the per-read timeout is capped by the total deadline
                raise EmbeddingError(self._late_message()) from exc
            raise EmbeddingError(
                f"{self.server_name} at {self.base_url} did not answer within {self._timeout:g} s"
            ) from exc
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"request to {self.server_name} at {url} failed: {exc}") from exc
        text = body.decode("utf-8", "replace")
        if response.is_error:
            excerpt = text[:_BODY_EXCERPT_CHARS].strip()
            raise EmbeddingError(
                f"{self.server_name} at {url} answered HTTP {response.status_code} "
                f"for model {self.model!r}: {excerpt or '(empty body)'}"
            )
        try:
            return json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise self._malformed(f"the body is not JSON: {text[:80]!r}") from exc

    def _unreachable_message(self, exc: httpx.ConnectError) -> str:
        return f"cannot reach {self.server_name} at {self.base_url}: {exc}"

    def _malformed(self, detail: str) -> EmbeddingError:
        return EmbeddingError(f"malformed embedding response from {self.server_name}: {detail}")

    def _checked(self, raw: Any, expected_count: int) -> np.ndarray:
        if not isinstance(raw, list) or len(raw) != expected_count:
            got = f"{len(raw)} vectors" if isinstance(raw, list) else type(raw).__name__
            raise self._malformed(f"expected {expected_count} vectors, got {got}")
        try:
            with np.errstate(over="ignore"):  # an overflow becomes inf, refused below
                vectors = np.array(raw, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise self._malformed("the vectors are not lists of numbers of one length") from exc
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise self._malformed("the vectors are not lists of numbers of one length")
        if not np.isfinite(vectors).all():
            raise self._malformed("the vectors contain NaN, infinite or overflowing values")
        zero = np.flatnonzero(~(np.linalg.norm(vectors.astype(np.float64), axis=1) > 0))
        if zero.size:
            raise self._malformed(
                f"{zero.size} of {len(vectors)} vectors are all zeros (the model is not serving embeddings); "
                "nothing was stored"
            )
        with self._dim_lock:
            if self._vector_dim is None:
                self._vector_dim = int(vectors.shape[1])
        if vectors.shape[1] != self._vector_dim:
            raise EmbeddingError(
                f"{self.server_name} model {self.model!r} returned {vectors.shape[1]}-dimensional "
                f"vectors, but {self._vector_dim} were expected (check the configured vector_dim)"
            )
        return l2_normalised(vectors)


class OllamaEmbedder(HttpEmbedder):
    """Ollama's native ``POST /api/embed`` (a list of inputs per request)."""

    server_name = "Ollama"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_OLLAMA_URL,
        vector_dim: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        request_deadline: float = DEFAULT_REQUEST_DEADLINE_SECONDS,
    ) -> None:
        super().__init__(
            provider="ollama",
            base_url=base_url,
            model=model,
            vector_dim=vector_dim,
            batch_size=batch_size,
            timeout=timeout,
            request_deadline=request_deadline,
        )

    def _request_vectors(self, texts: list[str]) -> Any:
        # truncate: a text longer than the model's context is cut rather than refused
        body = self._post(
            f"{self.base_url}/api/embed",
            {"model": self.model, "input": texts, "truncate": True},
        )
        if not isinstance(body, dict) or "embeddings" not in body:
            raise self._malformed("no 'embeddings' field")
        return body["embeddings"]

    def _unreachable_message(self, exc: httpx.ConnectError) -> str:
        return f"cannot reach Ollama at {self.base_url}: is it running?"


class OpenAICompatibleEmbedder(HttpEmbedder):
    """``POST {base_url}/embeddings`` in the OpenAI wire format (OpenAI, vLLM, LM Studio, …)."""

    server_name = "the embedding server"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_OPENAI_URL,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        provider: str = "openai-compatible",
        request_deadline: float = DEFAULT_REQUEST_DEADLINE_SECONDS,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        super().__init__(
            provider=provider,
            base_url=base_url,
            model=model,
            vector_dim=dimensions,
            batch_size=batch_size,
            timeout=timeout,
            headers=headers,
            request_deadline=request_deadline,
        )
        # sent only when configured: many servers reject the field for fixed-size models
        self._requested_dimensions = dimensions

    def _request_vectors(self, texts: list[str]) -> Any:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._requested_dimensions is not None:
            payload["dimensions"] = self._requested_dimensions
        return self._vectors(self._post(f"{self.base_url}/embeddings", payload))

    def _vectors(self, body: Any) -> Any:
        """The vectors of an OpenAI-style embeddings response, in the order of the inputs."""
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise self._malformed("no 'data' list")
        try:
            # the format allows any order: 'index' says which input each vector belongs to
            ordered = sorted(data, key=lambda entry: entry["index"])
            return [entry["embedding"] for entry in ordered]
        except (KeyError, TypeError) as exc:
            raise self._malformed("each 'data' entry needs 'index' and 'embedding'") from exc
