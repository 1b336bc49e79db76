"""Embedders: the offline default (MiniLM on onnxruntime), HTTP providers, and a GGUF embedding
model file run by the built-in llama.cpp runtime (``model-file``)."""

from __future__ import annotations

import os

from haiku.rag.embeddings.base import Embedder, EmbedderIdentity

PROVIDERS = ("local", "ollama", "openai-compatible", "openai", "model-file")
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"

__all__ = ["PROVIDERS", "Embedder", "EmbedderIdentity", "create_embedder"]


def create_embedder(
    provider: str = "local",
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    vector_dim: int | None = None,
    batch_size: int | None = None,
    threads: int | None = None,
    request_deadline: float | None = None,
) -> Embedder:
    """Build an embedder; nothing is loaded or contacted until it is first used.

    ``batch_size`` defaults per provider: texts per request for HTTP providers (32), at most
    that many texts per model run for the local one (32), which also caps a run at 1,024 padded
    tokens: 256-token chunks go 4 at a time, the fastest shape on 2 cores (docs/benchmarks.md). ``threads`` applies to the local embedder only (onnxruntime intra-op
    threads; all cores by default). ``request_deadline`` bounds each HTTP request in total
(seconds; 300 by default). ``provider="openai"`` is the OpenAI-compatible embedder
    pointed at OpenAI, with the key taken from ``OPENAI_API_KEY`` when ``api_key`` is not given.
    ``provider="model-file"`` takes the path of a GGUF embedding model as ``model``: its header
    (read here) gives the vector size; the built-in runtime loads it on the first request.
    """
    if provider == "local":
        from haiku.rag.embeddings.local import (
            DEFAULT_BATCH_SIZE,
            MODEL_NAME,
            VECTOR_DIM,
            LocalEmbedder,
        )

        if model not in (None, MODEL_NAME):
            raise ValueError(
                f"the local embedder only provides {MODEL_NAME!r}, not {model!r}; "
                "use 'ollama' or 'openai-compatible' for other models"
            )
        if vector_dim not in (None, VECTOR_DIM):
            raise ValueError(f"{MODEL_NAME} has {VECTOR_DIM} dimensions, not {vector_dim}")
        return LocalEmbedder(
            batch_size=DEFAULT_BATCH_SIZE if batch_size is None else batch_size, threads=threads
        )

    from haiku.rag.embeddings import http

    if batch_size is None:
        batch_size = http.DEFAULT_BATCH_SIZE
    if request_deadline is None:
        request_deadline = http.DEFAULT_REQUEST_DEADLINE_SECONDS

    if provider == "model-file":
        from haiku.rag.embeddings.model_file import ModelFileEmbedder

        if not model:
            raise ValueError("the 'model-file' embedder needs the path of a GGUF embedding model file")
        return ModelFileEmbedder(
            model, vector_dim=vector_dim, batch_size=batch_size, request_deadline=request_deadline
        )
    if provider == "ollama":
        return http.OllamaEmbedder(
            _required_model(provider, model),
            base_url=base_url or http.DEFAULT_OLLAMA_URL,
            vector_dim=vector_dim,
            batch_size=batch_size,
            request_deadline=request_deadline,
        )
    if provider == "openai-compatible":
        if not base_url:
            raise ValueError(
                "the 'openai-compatible' embedder needs a base_url, e.g. http://localhost:8000/v1"
            )
        return http.OpenAICompatibleEmbedder(
            _required_model(provider, model),
            base_url=base_url,
            api_key=api_key,
            dimensions=vector_dim,
            batch_size=batch_size,
            request_deadline=request_deadline,
        )
    if provider == "openai":
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            raise ValueError("the 'openai' embedder needs an API key (api_key or OPENAI_API_KEY)")
        return http.OpenAICompatibleEmbedder(
            model or DEFAULT_OPENAI_MODEL,
            base_url=base_url or http.DEFAULT_OPENAI_URL,
            api_key=api_key,
            dimensions=vector_dim,
            batch_size=batch_size,
            provider="openai",
            request_deadline=request_deadline,
        )
    allowed = ", ".join(repr(name) for name in PROVIDERS)
    raise ValueError(f"unknown embedding provider {provider!r}; choose one of {allowed}")


def _required_model(provider: str, model: str | None) -> str:
    if not model:
        raise ValueError(f"the {provider!r} embedder needs a model name")
    return model
