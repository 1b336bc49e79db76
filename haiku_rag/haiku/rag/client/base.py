"""What one client holds and how its work runs: the store, the config, the embedder and the
reranker (each created on first use), and the helpers that run store work off the event loop.

The per-domain modules (``documents``, ``ingestion``, ``search``…) are functions over a
``ClientBase``; ``HaikuRAG`` (``client.facade``) is this class with those functions as its
methods.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from haiku.rag.config import AppConfig, EmbeddingsConfig, load_config, resolve_db_path
from haiku.rag.errors import (
    HaikuRAGError,
    OperationCancelled,
    SourceNotFoundError,
    StoreError,
    StoreNotFoundError,
    register_secret,
)
from haiku.rag.operations import CancelToken
from haiku.rag.store.engine import Store, unanswered


class ClientBase:
    """Async client over one store.

    ``db_path`` resolves as the spec says: the argument, then ``HAIKU_RAG_DB``, then
    ``<data_dir>/haiku.rag.lancedb``; ``lancedb.uri`` in the config, when set, wins
    (object storage or LanceDB Cloud).
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str] | None = None,
        config: AppConfig | None = None,
        *,
        create: bool = False,
        read_only: bool = False,
        skip_validation: bool = False,
    ) -> None:
        self.config = config or load_config()
        location = resolve_db_path(db_path, self.config)
        self.location = self.config.lancedb.uri or location
        self.store = Store(
            self.location,
            create=create,
            read_only=read_only,
            storage_options=self.config.lancedb.storage_options,
            read_consistency_interval=self.config.lancedb.read_consistency_interval_seconds,
            region=self.config.lancedb.region,
            exact_search_budget_bytes=self.config.search.exact_search_budget_mb * 1024 * 1024,
            remote_deadline=self.config.lancedb.request_deadline_seconds,
        )
        self._embedder: Any = None
        self._reranker: Any = None
        self._reranker_config: Any = None
        if not skip_validation:
            provider, model, dim = self.configured_embedder()
            self.store.check_embedder(provider, model, dim)

    def release_memory(self) -> None:
        """Give back what ingestion and search hold between uses, once the library is idle:
        the embedder's model session, the search caches (the exact-search matrix, the
        documents snapshot), the parse workers beyond the first (a batch's second process)
        and the heap pages freed by them. Everything is loaded again on next use; nothing
        stored changes. The app calls this when its work queue drains."""
        from haiku.rag.ingest.isolation import release_extra_workers
        from haiku.rag.memory import return_freed_memory

        release_extra_workers()
        if self._embedder is not None:
            self._embedder.release()
        self.store.release_caches()
        return_freed_memory()

    def warm_up_search(self) -> bool:
        """Say that searches are coming (a host with a chat, once the library is open): a
        library beyond the exact-search budget then loads its ANN and full-text indexes and
        its chunks' pages in the background (``Store.prewarm``), so the first questions do not
        read them. Without this the first search through the index starts it. Returns whether
        anything started; never blocks on it."""
        return self.store.prewarm()

    def close(self) -> None:
        if self._embedder is not None:
            self._embedder.close()
            self._embedder = None
        if self._reranker is not None:
            self._reranker.close()
            self._reranker = None
        self.store.close()

    @property
    def is_read_only(self) -> bool:
        return self.store.read_only

    # --- embedder and reranker --------------------------------------------------------------

    def configured_embedder(self) -> tuple[str, str, int | None]:
        """(provider, model, vector size or None when the provider reports it) from config."""
        cfg = self.config.embeddings
        if cfg.provider == "local":
            from haiku.rag.embeddings.local import MODEL_NAME, VECTOR_DIM

            return "local", cfg.model or MODEL_NAME, VECTOR_DIM
        if not cfg.model:
            raise HaikuRAGError(f"embeddings.model must be set for the {cfg.provider} provider")
        return cfg.provider, cfg.model, cfg.vector_dim

    @property
    def embedder(self) -> Any:
        """The embedder, created on first use (loading a model is not free)."""
        if self._embedder is None:
            self._embedder = self._create_embedder(self.config.embeddings)
        return self._embedder

    def _create_embedder(self, cfg: EmbeddingsConfig) -> Any:
        from haiku.rag.embeddings import create_embedder

        base_url = cfg.base_url
        if cfg.provider == "ollama" and not base_url:
            base_url = self.config.providers.ollama.base_url
        api_key = os.environ.get("OPENAI_API_KEY") if cfg.provider == "openai" else None
        register_secret(api_key)
        return create_embedder(
            cfg.provider,
            cfg.model,
            base_url=base_url,
            api_key=api_key,
            vector_dim=cfg.vector_dim,
            batch_size=cfg.batch_size,
            threads=cfg.threads,
            request_deadline=cfg.request_deadline,
        )

    @property
    def reranker(self) -> Any:
        """The configured reranker (``search.rerank``), created on first use and again when
        that setting changes (the app's settings change it on an open library); None when off."""
        wanted = self.config.search.rerank
        if self._reranker is not None and self._reranker_config == wanted:
            return self._reranker
        if self._reranker is not None:
            self._reranker.close()
            self._reranker = None
        if wanted.provider != "none":
            from haiku.rag.search.rerank import create_reranker

            self._reranker = create_reranker(wanted)
            self._reranker_config = wanted.model_copy()
        return self._reranker

    def _has_vectors(self) -> bool:
        from haiku.rag.store import schema

        return self.store.has_table(schema.CHUNK_VECTORS)

    # --- running store work off the event loop ------------------------------------------------

    def _reading(self, func: Any) -> Any:
        """``func`` marked as a read in this process while it runs (``Store.reading``): upkeep
        keeps the table versions it may be reading, whatever this process writes meanwhile."""
        store = self.store

        def run(*args: Any, **kwargs: Any) -> Any:
            with store.reading():
                return func(*args, **kwargs)

        return run

    async def _store_thread(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``asyncio.to_thread`` for store work: a store folder deleted or moved while open
        becomes a ``StoreNotFoundError`` that says so, not lance's internal "Not found"."""
        try:
            return await asyncio.to_thread(self._reading(func), *args, **kwargs)
        except (OSError, RuntimeError, ValueError) as exc:
            if isinstance(exc, HaikuRAGError):
                raise
            if self.store.is_remote and unanswered(exc):
                raise StoreError(
                    f"the object store at {self.location} did not answer within the deadline "
                    f"({self.store.remote_deadline:g} s, lancedb.request_deadline_seconds); check the endpoint "
                    "and the network, then try again. Nothing was changed."
                ) from exc
            if self.store.folder_intact():
                raise
            raise StoreNotFoundError(
                f"the store folder {self.location} was deleted or moved while it was open "
                "(or replaced by an empty folder); "
                "reopen the library (or restore the folder from a backup)"
            ) from exc


def installed_embedders() -> list[tuple[str, str, int]]:
    """(provider, model, vector size) of the embedders that run offline from installed
    packages, for a settings screen; others are reached over HTTP (Ollama, OpenAI-compatible)."""
    from haiku.rag.embeddings.local import MODEL_NAME, VECTOR_DIM

    return [("local", MODEL_NAME, VECTOR_DIM)]


def local_path(source: str | os.PathLike[str]) -> Path:
    text = os.fspath(source)
    if text.startswith("file://"):
        from haiku.rag.files import path_from_file_uri

        text = path_from_file_uri(text)  # a Windows drive letter or UNC share comes back
    elif "://" in text:
        raise SourceNotFoundError(f"{text}: only local files and folders can be added for now", source=text)
    return Path(text).expanduser()


async def run_cancellable(cancel: CancelToken, func: Any, *args: Any) -> Any:
    """Run blocking work in a thread; cancelling the awaiting task sets the token, and the
    worker stops at its next check and rolls back its write."""
    task = asyncio.ensure_future(asyncio.to_thread(func, *args))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        cancel.cancel()
        try:
            await task
        except (OperationCancelled, Exception):
            pass
        raise
