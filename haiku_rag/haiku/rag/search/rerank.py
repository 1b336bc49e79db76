"""Rerankers: a second, finer ordering of the fused candidates (``search.rerank`` in config).

All supported providers speak one wire format: POST ``<base_url>/rerank`` with
``{"model", "query", "documents": [...], "top_n"}`` and answer
``{"results": [{"index", "relevance_score"}, ...]}``. That is llama.cpp's server (started with
``--reranking``), vLLM, most OpenAI-compatible servers, Cohere (``/v2/rerank``) and Jina
(``/v1/rerank``). No offline cross-encoder ships in an installed package, so reranking is off
by default. API keys come from the OS keychain (service ``haiku-desk``, user = provider name,
as for chat models) or the provider's environment variable; they travel only in the
Authorization header and never appear in messages or logs.

A reranker that fails raises ``RerankError``; ``search_chunks`` then keeps the fused order
and logs a warning, so a reranker outage never fails a search.
"""

from __future__ import annotations

import math
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from haiku.rag.errors import HaikuRAGError

if TYPE_CHECKING:
    from haiku.rag.config import RerankConfig

RERANK_PROVIDERS = ("none", "http", "cohere", "jina")
DEFAULT_URLS = {"cohere": "https://api.cohere.com/v2", "jina": "https://api.jina.ai/v1"}
DEFAULT_MODELS = {"cohere": "rerank-v3.5", "jina": "jina-reranker-v2-base-multilingual"}
# The keychain user is the provider name; "http" is too generic to share one with anything else.
KEYCHAIN_USERS = {"http": "rerank-http", "cohere": "cohere", "jina": "jina"}
KEY_ENV = {"http": ("RERANK_API_KEY",), "cohere": ("COHERE_API_KEY", "CO_API_KEY"), "jina": ("JINA_API_KEY",)}
_BODY_EXCERPT_CHARS = 200


class RerankError(HaikuRAGError):
    """The reranker could not order the candidates (unreachable, HTTP error, malformed answer)."""


class Reranker(ABC):
    #: how the reranker is named in messages, e.g. "rerank server at http://…"
    description: str

    @abstractmethod
    def rerank(self, query: str, documents: Sequence[str], top_n: int) -> list[tuple[int, float]]:
        """(index into ``documents``, relevance score) for at most ``top_n`` documents, best
        first. Raises ``RerankError``."""

    def close(self) -> None:  # noqa: B027 - not every reranker holds a connection
        pass


class HttpReranker(Reranker):
    """The ``/rerank`` wire format shared by llama.cpp, vLLM, Cohere and Jina."""

    def __init__(
        self, *, base_url: str, model: str | None, api_key: str | None = None, timeout: float = 30.0
    ) -> None:
        import httpx

        self.url = base_url.rstrip("/") + "/rerank"
        self.model = model
        self.description = f"rerank server at {self.url}"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        self._timeout = timeout
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def rerank(self, query: str, documents: Sequence[str], top_n: int) -> list[tuple[int, float]]:
        import httpx

        payload: dict[str, Any] = {"query": query, "documents": list(documents), "top_n": top_n}
        if self.model:
            payload["model"] = self.model
        try:
            response = self._client.post(self.url, json=payload)
        except httpx.TimeoutException as exc:
            raise RerankError(f"{self.description} did not answer within {self._timeout:g} s") from exc
        except httpx.HTTPError as exc:
            raise RerankError(f"cannot reach {self.description}: {exc}") from exc
        if response.is_error:
            excerpt = response.text[:_BODY_EXCERPT_CHARS].strip()
            raise RerankError(f"{self.description} answered HTTP {response.status_code}: {excerpt or '(empty body)'}")
        try:
            body = response.json()
        except ValueError as exc:
            raise RerankError(f"{self.description} answered something that is not JSON") from exc
        return parse_results(body, len(documents), top_n, self.description)

    def close(self) -> None:
        self._client.close()


def parse_results(body: Any, count: int, top_n: int, where: str) -> list[tuple[int, float]]:
    """Validate a ``{"results": [{"index", "relevance_score"}]}`` answer and order it best first."""
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list):
        raise RerankError(f"malformed answer from {where}: no 'results' list")
    ranked: dict[int, float] = {}
    for item in results:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise RerankError(f"malformed answer from {where}: index {index!r} is not one of the {count} documents")
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            raise RerankError(f"malformed answer from {where}: relevance_score {score!r} is not a finite number")
        if index in ranked:
            raise RerankError(f"malformed answer from {where}: document {index} is ranked twice")
        ranked[index] = float(score)
    # Servers usually sort and honour top_n, but not all do (llama.cpp behind some proxies).
    return sorted(ranked.items(), key=lambda pair: -pair[1])[:top_n]


def resolve_rerank_key(provider: str, explicit: str | None = None) -> str | None:
    if explicit:
        return explicit
    from haiku.rag.models import keychain_key

    stored = keychain_key(KEYCHAIN_USERS.get(provider, provider))
    if stored:
        return stored
    for name in KEY_ENV.get(provider, ()):
        if os.environ.get(name):
            return os.environ[name]
    return None


def create_reranker(config: RerankConfig, *, api_key: str | None = None) -> Reranker | None:
    """The configured reranker, or None when reranking is off. Nothing is contacted here."""
    provider = config.provider
    if provider == "none":
        return None
    if provider not in RERANK_PROVIDERS:
        allowed = ", ".join(repr(name) for name in RERANK_PROVIDERS)
        raise ValueError(f"unknown rerank provider {provider!r}; choose one of {allowed}")
    base_url = config.base_url or DEFAULT_URLS.get(provider)
    if not base_url:
        raise ValueError("search.rerank.base_url must be set for the 'http' reranker, e.g. http://localhost:8080/v1")
    key = resolve_rerank_key(provider, api_key)
    if provider in ("cohere", "jina") and not key:
        names = " or ".join(KEY_ENV[provider])
        raise ValueError(f"the {provider!r} reranker needs an API key (OS keychain user {provider!r}, or {names})")
    return HttpReranker(
        base_url=base_url,
        model=config.model or DEFAULT_MODELS.get(provider),
        api_key=key,
        timeout=config.timeout_seconds,
    )
