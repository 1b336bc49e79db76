"""Embeddings from a GGUF embedding model file (nomic-embed-text, bge-m3, … from Ollama's store,
LM Studio's folders or anywhere), served by the built-in llama.cpp runtime: no model server.

The model runs in the runtime's child process (``haiku.rag.local_models.runtime``, started with
``embedding=True`` on the first request, on 127.0.0.1 with the session's key, unloaded after
its idle time, stopped when this embedder closes, at the app's quit or at exit). Requests go to
its ``/v1/embeddings`` through the OpenAI-compatible embedder, so batching, L2 normalisation,
the dimension and sanity checks and the request deadline are the same as for any server.

The vector size comes from the file's header (``<arch>.embedding_length``), so the store's
vector column is sized before any request, and a file that is not an embedding model is refused
at once with why. A text longer than the model's context (2,048 tokens at most here) is cut to
it rather than refused. The store records ``model-file`` and the path as given: the library remembers
which file it was embedded with, and a library opened with another file says so.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haiku.rag.embeddings.base import EmbedderIdentity
from haiku.rag.embeddings.http import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_REQUEST_DEADLINE_SECONDS,
    DEFAULT_TIMEOUT_SECONDS,
    OpenAICompatibleEmbedder,
)
from haiku.rag.errors import EmbeddingError

if TYPE_CHECKING:
    from haiku.rag.local_models.runtime import ModelRuntime

PROVIDER = "model-file"
# llama.cpp's answers to an input longer than its batch (an encoder) or its context (a decoder)
_TOO_LONG = ("too large to process", "exceeds the available context size")

log = logging.getLogger("haiku.rag")


class ModelFileEmbedder(OpenAICompatibleEmbedder):
    """``POST /v1/embeddings`` to the built-in runtime serving one GGUF embedding model."""

    server_name = "the built-in embedding model"

    def __init__(
        self,
        model: str,
        *,
        vector_dim: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        request_deadline: float = DEFAULT_REQUEST_DEADLINE_SECONDS,
        idle_seconds: float | None = None,
    ) -> None:
        from haiku.rag.local_models.provider import embedding_header, embedding_runtime_for
        from haiku.rag.local_models.runtime import ChatModelError

        if not model:
            raise ValueError("the 'model-file' embedder needs the path of a GGUF embedding model file")
        try:
            info = embedding_header(model)
        except ChatModelError as exc:  # ModelLoadError: not GGUF, not an embedding model
            raise EmbeddingError(str(exc)) from exc
        assert info.embedding_length is not None  # embedding_header refuses a header without it
        if vector_dim is not None and vector_dim != info.embedding_length:
            raise ValueError(
                f"{Path(model).name} makes {info.embedding_length}-dimensional vectors, not {vector_dim}"
            )
        try:
            self.runtime: ModelRuntime = embedding_runtime_for(model, idle_seconds=idle_seconds)
        except ChatModelError as exc:  # no xllamacpp, does not fit in memory
            raise EmbeddingError(str(exc)) from exc
        super().__init__(
            model,
            base_url="http://127.0.0.1/v1",  # the child's port is known once it runs
            api_key=self.runtime.api_key,
            dimensions=info.embedding_length,
            batch_size=batch_size,
            timeout=timeout,
            provider=PROVIDER,
            request_deadline=request_deadline,
        )
        self._requested_dimensions = None  # fixed by the file: never sent
        self._identity = EmbedderIdentity(PROVIDER, model, info.embedding_length)

    @property
    def identity(self) -> EmbedderIdentity:
        """From the header: no request, no process."""
        return self._identity

    def _request_vectors(self, texts: list[str]) -> Any:
        from haiku.rag.local_models.runtime import ChatModelError

        runtime = self.runtime
        try:
            address = runtime.ensure_started()  # loads the model on first use (seconds)
        except ChatModelError as exc:
            raise EmbeddingError(str(exc)) from exc
        runtime.request_started()
        try:
            try:
                body = self._embed(address, texts)
            except EmbeddingError as exc:
                if not any(reason in str(exc) for reason in _TOO_LONG):
                    raise
                # a text longer than the model's context: its first tokens are embedded (as
                # Ollama's truncate does), the rest of the batch as it is
                body = self._embed(address, self._truncated(address, texts))
        except EmbeddingError as exc:
            died = runtime.wait_died(1.0)
            if died is not None:  # a crash, or killed for memory: the next request restarts it
                raise EmbeddingError(str(died).replace("built-in model", "built-in embedding model")) from exc
            raise
        finally:
            runtime.request_ended()
        return self._vectors(body)

    def _embed(self, address: str, inputs: list[Any]) -> Any:
        return self._post(f"{address}/v1/embeddings", {"model": self.model, "input": inputs, "encoding_format": "float"})

    def _truncated(self, address: str, texts: list[str]) -> list[Any]:
        """Each text as the model's tokens (its special ones included), cut to the context:
        the first tokens and the closing one ([SEP], end of text) are kept."""
        limit = self.runtime.settings.context - 1  # a decoder's server wants fewer than its context
        inputs: list[Any] = []
        cut = 0
        for text in texts:
            body = self._post(f"{address}/tokenize", {"content": text, "add_special": True})
            tokens = body.get("tokens") if isinstance(body, dict) else None
            if not isinstance(tokens, list) or not tokens:
                raise self._malformed("the tokenizer returned no tokens")
            if len(tokens) > limit:
                tokens = tokens[: limit - 1] + tokens[-1:]
                cut += 1
            inputs.append(tokens)
        log.info("%s: %d of %d texts cut to the model's %d-token context", Path(self.model).name, cut, len(texts), limit)
        return inputs

    def close(self) -> None:
        """Stop the model's process (it also stops after its idle time and at exit)."""
        from haiku.rag.local_models.provider import stop_embedding

        super().close()
        stop_embedding(self.model)

    # release() is left to the runtime's idle unload: a search right after a batch of
    # ingests (the usual case) would otherwise wait for the model to load again
