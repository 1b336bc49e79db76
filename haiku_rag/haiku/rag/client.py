"""``HaikuRAG``: the store-and-search facade the CLI, the capabilities and the desktop app use.

It answers nothing itself: questions go through ``haiku.rag.answering``, which sits above this
facade (and above the capabilities), never below it.

Store and CPU work is synchronous underneath and runs in worker threads (``asyncio.to_thread``)
so an event loop (the app's GUI loop included) never blocks. Ingestion has two speeds: a
document is written, and searchable by full text, as soon as it is chunked; its vectors follow
and turn it into a hybrid-searchable document. An interrupted embedding phase leaves a
text-searchable document whose missing vectors ``embed_pending`` completes later.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import logging
import os
import time
from collections import Counter
from collections.abc import Iterable, Sequence, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from haiku.rag import collections
from haiku.rag.citations import pages_to_render
from haiku.rag.collections import Collection
from haiku.rag.config import AppConfig, EmbeddingsConfig, load_config, resolve_db_path
from haiku.rag.errors import (
    DocumentNotFoundError,
    HaikuRAGError,
    IngestCategory,
    IngestError,
    OperationCancelled,
    SourceNotFoundError,
    StoreNotFoundError,
    register_secret,
)
from haiku.rag.ingest.pipeline import (
    check_size,
    content_hash,
    file_uri,
    iter_source_files,
    parse_document,
)
from haiku.rag.ingest.records import Box
from haiku.rag.operations import (
    CancelToken,
    Progress,
    ProgressCallback,
    Stage,
    check_cancelled,
    report,
)
from haiku.rag.pages import PageImage, render_page
from haiku.rag.search.hybrid import SearchType
from haiku.rag.store import documents as docs
from haiku.rag.store.documents import NewDocument
from haiku.rag.store.engine import Store
from haiku.rag.store.models import Chunk, Document, SearchResult

log = logging.getLogger("haiku.rag")

COMPACT_AFTER_DOCUMENTS = 256  # an import that wrote this many compacts the store after it
VECTOR_WRITE_BATCH = 256  # vectors per store append: fewer table versions than per-batch writes

IngestStatus = Literal["ingested", "updated", "unchanged", "failed", "skipped"]


@dataclass(slots=True)
class ImportItem:
    """An in-memory document for ``import_documents``: its bytes or text, where it comes
    from, and a file name whose extension says how to parse it (``.md``, ``.txt``, ``.pdf``…)."""

    content: str | bytes
    uri: str
    filename: str = "document.md"
    title: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(slots=True)
class IngestOutcome:
    """What happened to one source; ``--json`` prints these, the app shows them per file.

    ``source`` is always the source's URI (``file://…`` for files), the same key a stored
    document has; ``category`` is set when ``status`` is ``failed``.
    """

    source: str
    status: IngestStatus
    document: Document | None = None
    category: IngestCategory | None = None
    reason: str | None = None
    # reading, parsing and storing this source (embedding excluded: it is batched across files)
    seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "status": self.status,
            "document_id": self.document.id if self.document else None,
            "title": self.document.title if self.document else None,
            "index_state": self.document.index_state if self.document else None,
            "category": None if self.category is None else self.category.value,
            "reason": self.reason,
            "seconds": None if self.seconds is None else round(self.seconds, 3),
        }


class HaikuRAG:
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
        )
        self._embedder: Any = None
        self._reranker: Any = None
        self._reranker_config: Any = None
        self._embedder_lock = asyncio.Lock()
        if not skip_validation:
            provider, model, dim = self.configured_embedder()
            self.store.check_embedder(provider, model, dim)

    async def __aenter__(self) -> HaikuRAG:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

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

    # --- embedder -------------------------------------------------------------------------

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
        )

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
            if isinstance(exc, HaikuRAGError) or self.store.is_remote or Path(self.location).is_dir():
                raise
            raise StoreNotFoundError(
                f"the store folder {self.location} was deleted or moved while it was open; "
                "reopen the library (or restore the folder from a backup)"
            ) from exc

    # --- documents ------------------------------------------------------------------------

    async def get_document(self, document_id: str) -> Document:
        return await self._store_thread(docs.get_document, self.store, document_id)

    async def get_document_by_uri(self, uri: str) -> Document | None:
        return await self._store_thread(docs.find_document_by_uri, self.store, uri)

    async def resolve_document(self, id_or_title: str) -> Document:
        """By id, then title or URI (``haiku.rag.resolve``: NFC, and a name two documents share
        is an ``AmbiguousDocumentError`` listing their ids)."""
        from haiku.rag.resolve import match_document

        def find() -> Document:
            try:
                return docs.get_document(self.store, id_or_title)
            except DocumentNotFoundError:
                pass
            return match_document(docs.list_documents(self.store), id_or_title)

        return await self._store_thread(find)

    async def list_documents(
        self, *, filter: str | None = None, limit: int | None = None, offset: int = 0
    ) -> list[Document]:
        return await self._store_thread(
            docs.list_documents, self.store, filter=filter, limit=limit, offset=offset
        )

    async def get_chunks(self, document: Document) -> list[Chunk]:
        return await self._store_thread(docs.get_chunks, self.store, document)

    async def get_chunk(self, chunk_id: str) -> Chunk:
        rows = await self._store_thread(docs.get_chunks_by_id, self.store, [chunk_id])
        if chunk_id not in rows:
            raise DocumentNotFoundError(f"no chunk with id {chunk_id}")
        return docs.chunk_from_row(rows[chunk_id])

    async def get_source_bytes(self, document: Document) -> bytes:
        return await self._store_thread(docs.get_source_bytes, self.store, document)

    async def get_content(self, document: Document) -> str:
        return await self._store_thread(docs.get_content, self.store, document)

    async def delete_document(self, document_id: str) -> Document:
        return await self._store_thread(docs.delete_document, self.store, document_id)

    async def update_document(
        self, document_id: str, *, title: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Document:
        return await self._store_thread(
            docs.update_document_meta, self.store, document_id, title=title, metadata=metadata
        )

    async def rename_document(self, document_id: str, title: str | None) -> Document:
        """Give a document the user's own title, kept across re-ingests (``metadata``'s
        ``user_title``); ``None`` or "" goes back to the title found in the file."""
        return await asyncio.to_thread(self._reading(docs.rename_document), self.store, document_id, title)

    async def update_bibliographic(
        self, document_id: str, record: Any, *, title: str | None = None
    ) -> Document:
        """Store the bibliographic record a person edited (a ``Bibliographic``, see
        ``haiku.rag.bibliography.edited_record``) and, with ``title``, the document's title:
        checked first (``BibliographicError`` names a bad field and nothing is written), then
        one atomic write of the documents row; nothing is re-parsed or re-embedded. A record
        whose ``source`` is ``"user"`` is kept when the file is re-ingested."""
        from haiku.rag.bibliography import METADATA_KEY, Bibliographic, check_record

        checked = check_record(Bibliographic.model_validate(record))
        return await asyncio.to_thread(
            self._reading(docs.update_metadata), self.store, document_id, {METADATA_KEY: checked.to_metadata()}, title=title
        )

    async def create_document(
        self,
        content: str,
        *,
        uri: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        format: Literal["md", "plain"] = "md",
        embed: bool = True,
    ) -> Document:
        """A document from text (Markdown or plain).

        With ``embed`` the chunks are embedded before anything is written, and the document,
        its chunks and their vectors are written in one transaction: a loop of these calls
        costs one table version per table and document, and no read-back of what it wrote.
        If embedding fails nothing is stored."""
        data = content.encode("utf-8")
        name = "document.md" if format == "md" else "document.txt"
        uri = uri or f"text://{content_hash(data)[:16]}"
        outcome = await self._store_thread(
            self._ingest_bytes_sync, data, name, uri, title, metadata, None, None, None, embed
        )
        if outcome.status == "failed":
            raise IngestError(outcome.reason or "ingest failed", source=uri)
        assert outcome.document is not None
        if embed and outcome.document.index_state == "text":
            # unchanged, but its vectors were never completed (an interrupted earlier pass)
            await self.embed_pending([outcome.document])
            return await self.get_document(outcome.document.id)
        return outcome.document

    # --- ingestion ------------------------------------------------------------------------

    async def create_document_from_source(
        self,
        source: str | os.PathLike[str],
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        password: str | None = None,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
        embed: bool = True,
    ) -> Document | list[Document]:
        """Ingest a file (returns its document; raises ``IngestError``) or a folder
        (returns the documents ingested or unchanged; failures are logged — use
        ``add_source`` for a per-file report)."""
        path = _local_path(source)
        if path.is_dir():
            outcomes = await self.add_source(path, progress=progress, cancel=cancel, embed=embed)
            return [o.document for o in outcomes if o.document is not None]
        outcome = await self.ingest_file(
            path, title=title, metadata=metadata, password=password, progress=progress, cancel=cancel, embed=embed
        )
        if outcome.document is None:
            raise IngestError(outcome.reason or "ingest failed", source=outcome.source)
        return outcome.document

    async def ingest_file(
        self,
        path: str | os.PathLike[str],
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        password: str | None = None,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
        embed: bool = True,
    ) -> IngestOutcome:
        """Ingest one file; a bad file becomes a ``failed`` outcome, never an exception."""
        cancel = cancel or CancelToken()
        started = time.perf_counter()
        outcome = await _run_cancellable(
            cancel, self._reading(self._ingest_path_sync), Path(path), title, metadata, password, progress, cancel
        )
        outcome.seconds = time.perf_counter() - started
        if embed and outcome.document is not None and outcome.document.index_state == "text":
            await self.embed_pending([outcome.document], progress=progress, cancel=cancel)
            outcome.document = await self.get_document(outcome.document.id)
        return outcome

    async def ingest_bytes(
        self,
        data: bytes,
        *,
        filename: str,
        uri: str,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
        embed: bool = True,
    ) -> IngestOutcome:
        """Ingest a file's bytes under ``uri`` (e.g. an attachment of a Zotero item);
        ``filename`` picks the converter. A bad file becomes a ``failed`` outcome."""
        cancel = cancel or CancelToken()
        started = time.perf_counter()
        outcome = await _run_cancellable(
            cancel, self._reading(self._ingest_bytes_sync), data, filename, uri, title, metadata, None, progress, cancel
        )
        outcome.seconds = time.perf_counter() - started
        if embed and outcome.document is not None and outcome.document.index_state == "text":
            await self.embed_pending([outcome.document], progress=progress, cancel=cancel)
            outcome.document = await self.get_document(outcome.document.id)
        return outcome

    async def add_source(
        self,
        source: str | os.PathLike[str],
        *,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
        embed: bool = True,
    ) -> list[IngestOutcome]:
        """Ingest a file or every file below a folder, going on after failures (see
        ``import_documents``)."""
        path = _local_path(source)
        if not path.exists() and not path.is_symlink():
            raise SourceNotFoundError(f"{path} does not exist", source=str(path))
        files = iter_source_files(path) if path.is_dir() else [path]
        return await self.import_documents(files, progress=progress, cancel=cancel, embed=embed)

    async def import_documents(
        self,
        sources: Iterable[str | os.PathLike[str] | ImportItem],
        *,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
        embed: bool = True,
    ) -> list[IngestOutcome]:
        """Import many documents: files (paths) and in-memory ones (``ImportItem``).

        The public batch import that ``add-src``, the benchmarks and scripts use. Sources are
        read and parsed one at a time (``sources`` may be a generator: memory stays flat) and
        new documents are written a batch at a time (``store.batch``): a few table versions
        per batch, not per document. Each document is still atomic: a batch commits whole or
        not at all, and documents committed before a cancellation or a failure stay. Bad
        sources become ``failed``/``skipped`` outcomes, in the order given. All documents are
        searchable by full text first; vectors are computed afterwards (``embed``).

        Progress: ``Stage.DONE`` per source, with ``done``/``total`` counting sources (``total``
        is 0 when ``sources`` has no length).
        """
        cancel = cancel or CancelToken()
        outcomes = await _run_cancellable(cancel, self._reading(self._import_sync), sources, progress, cancel)
        if embed:
            to_embed = [o.document for o in outcomes if o.document and o.document.index_state == "text"]
            await self.embed_pending(to_embed, progress=progress, cancel=cancel)
            current = {d.id: d for d in await self._store_thread(docs.get_documents, self.store, [o.document.id for o in outcomes if o.document])}
            for o in outcomes:
                if o.document is not None:
                    o.document = current.get(o.document.id, o.document)
        # Compaction after a large import: its batches' fragments merged and the index lag
        # folded in once (a small one waits until enough rows lag, see ``maintain_indexes``).
        written = sum(1 for o in outcomes if o.status in ("ingested", "updated"))
        await self.maintain_indexes(force=written >= COMPACT_AFTER_DOCUMENTS)
        return outcomes

    def _import_sync(
        self,
        sources: Iterable[str | os.PathLike[str] | ImportItem],
        progress: ProgressCallback | None,
        cancel: CancelToken,
    ) -> list[IngestOutcome]:
        from haiku.rag.ingest.isolation import largest_first, parse_ahead, parse_workers
        from haiku.rag.store.batch import DocumentBatch

        total = len(sources) if isinstance(sources, Sized) else 0
        batch = DocumentBatch(self.store)
        outcomes: dict[int, IngestOutcome] = {}  # by position in ``sources``
        finished = 0

        def land(written: list[tuple[Any, Document]]) -> None:
            nonlocal finished
            for index, document in written:
                outcome = outcomes[index]
                outcome.document = document
                finished += 1
                report(progress, Progress(Stage.DONE, outcome.source, finished, total, "searchable (text)"))
            if written:
                self.store.maintain_indexes()  # no-op until enough rows lag the indexes

        def prepare(
            indexed: tuple[int, str | os.PathLike[str] | ImportItem],
        ) -> tuple[int, IngestOutcome | tuple[NewDocument, Document | None], float]:
            check_cancelled(cancel)
            started = time.perf_counter()
            index, source = indexed
            return index, self._prepare_import(source, progress, cancel), time.perf_counter() - started

        # The next files are parsed (each in its own worker process) while this one is written;
        # with more than one worker, the largest files of a list go first (``largest_first``).
        workers = parse_workers(self.config.processing)
        order = largest_first(sources, _source_size) if workers > 1 else enumerate(sources)
        # closing(): an error or a cancellation ends the parses in flight before it propagates
        with contextlib.closing(parse_ahead(order, prepare, workers)) as parsed:
            for index, prepared, parse_seconds in parsed:
                check_cancelled(cancel)
                write_started = time.perf_counter()
                if isinstance(prepared, IngestOutcome):
                    prepared.seconds = parse_seconds
                    outcomes[index] = prepared
                    finished += 1
                    report(progress, Progress(Stage.DONE, prepared.source, finished, total, prepared.reason or prepared.status))
                    continue
                new, existing = prepared
                outcome = outcomes[index] = IngestOutcome(new.uri, "updated" if existing else "ingested")
                if existing is not None:  # a replacement is one in-place update: written alone
                    land(batch.flush())
                    outcome.document, _ = docs.write_document(self.store, new, replaces=existing)
                    finished += 1
                    report(progress, Progress(Stage.DONE, outcome.source, finished, total, "searchable (text)"))
                else:
                    land(batch.add(index, new))
                outcome.seconds = parse_seconds + time.perf_counter() - write_started
        land(batch.flush())
        return [outcomes[index] for index in sorted(outcomes)]

    def _prepare_import(
        self, source: str | os.PathLike[str] | ImportItem, progress: ProgressCallback | None, cancel: CancelToken
    ) -> IngestOutcome | tuple[NewDocument, Document | None]:
        if isinstance(source, ImportItem):
            data = source.content.encode("utf-8") if isinstance(source.content, str) else source.content
            return self._parse_sync(
                data, source.filename, source.uri, source.title, source.metadata, None, progress, cancel
            )
        path = Path(os.fspath(source))
        report(progress, Progress(Stage.READING, str(path)))
        read = self._read_source(path)
        if isinstance(read, IngestOutcome):
            return read
        return self._parse_sync(read, path.name, file_uri(path), None, None, None, progress, cancel)

    def _read_source(self, path: Path) -> IngestOutcome | bytes:
        """The file's bytes, or the outcome that says why it cannot be read (keyed by URI)."""
        if path.is_symlink():
            # a loop cannot be resolved, so its URI is the link's own absolute path
            loop = IngestOutcome(
                path.absolute().as_uri(), "skipped", category=IngestCategory.SYMLINK_LOOP, reason="symlink loop"
            )
            try:
                path.resolve(strict=True)
            except RuntimeError:  # Python 3.11 reports a loop so; 3.13 raises OSError(ELOOP)
                return loop
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    return loop
        uri = file_uri(path)
        try:
            if not path.is_file():
                raise SourceNotFoundError(f"{path} does not exist or is not a file", source=str(path))
            check_size(path, path.stat().st_size, self.config)
            return path.read_bytes()
        except IngestError as exc:
            return IngestOutcome(uri, "failed", category=exc.category, reason=str(exc))
        except OSError as exc:
            category = IngestCategory.PERMISSION_DENIED if exc.errno in (errno.EPERM, errno.EACCES) else IngestCategory.NOT_FOUND
            return IngestOutcome(uri, "failed", category=category, reason=f"{path}: {exc.strerror or exc}")

    def _ingest_path_sync(
        self,
        path: Path,
        title: str | None,
        metadata: dict[str, Any] | None,
        password: str | None,
        progress: ProgressCallback | None,
        cancel: CancelToken | None,
    ) -> IngestOutcome:
        report(progress, Progress(Stage.READING, str(path)))
        read = self._read_source(path)
        if isinstance(read, IngestOutcome):
            return read
        return self._ingest_bytes_sync(read, path.name, file_uri(path), title, metadata, password, progress, cancel)

    def _ingest_bytes_sync(
        self,
        data: bytes,
        filename: str,
        uri: str,
        title: str | None,
        metadata: dict[str, Any] | None,
        password: str | None,
        progress: ProgressCallback | None,
        cancel: CancelToken | None,
        embed: bool = False,
    ) -> IngestOutcome:
        """Parse and write one source. With ``embed`` the vectors are computed before the write
        and written with the document, in its transaction (see ``docs.write_document``)."""
        prepared = self._parse_sync(data, filename, uri, title, metadata, password, progress, cancel)
        if isinstance(prepared, IngestOutcome):
            return prepared
        new, existing = prepared
        vectors = None
        if embed:
            embedder = self.embedder
            identity = embedder.identity
            # Before the embedding: a store built with another model refuses without the work.
            self.store.ensure_vector_table(identity.provider, identity.model, identity.vector_dim)
            vectors = embedder.embed_documents([chunk.embed_text for chunk in new.chunks], cancel=cancel)
            check_cancelled(cancel)
        document, _ = docs.write_document(self.store, new, replaces=existing, vectors=vectors)
        report(progress, Progress(Stage.DONE, uri, message="searchable (hybrid)" if embed else "searchable (text)"))
        if embed:
            self.store.maintain_indexes()  # a no-op until enough rows lag the indexes
        return IngestOutcome(uri, "updated" if existing else "ingested", document=document)

    def _parse_sync(
        self,
        data: bytes,
        filename: str,
        uri: str,
        title: str | None,
        metadata: dict[str, Any] | None,
        password: str | None,
        progress: ProgressCallback | None,
        cancel: CancelToken | None,
    ) -> IngestOutcome | tuple[NewDocument, Document | None]:
        """The parsed document and the one it replaces, or the outcome when there is nothing
        to write (unchanged, or a file that cannot be parsed)."""
        existing = docs.find_document_by_uri(self.store, uri)
        if existing is not None and existing.content_hash == content_hash(data):
            report(progress, Progress(Stage.DONE, uri, message="unchanged"))
            return IngestOutcome(uri, "unchanged", document=existing)
        try:
            new = parse_document(
                data,
                filename=filename,
                uri=uri,
                config=self.config,
                title=title,
                metadata=metadata,
                password=password,
                progress=progress,
                cancel=cancel,
            )
        except IngestError as exc:
            log.info("ingest failed for %s: %s", uri, exc)
            return IngestOutcome(uri, "failed", category=exc.category, reason=str(exc))
        check_cancelled(cancel)
        _add_bibliographic(new, filename, existing)
        report(progress, Progress(Stage.STORING, uri, total=len(new.chunks)))
        return new, existing

    async def embed_pending(
        self,
        documents: Sequence[Document] | None = None,
        *,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> int:
        """Compute the vectors that are missing (all documents when none are named).

        Returns how many chunks were embedded. Cancellation keeps the vectors already written;
        the document stays full-text searchable and a later call completes it.
        """
        cancel = cancel or CancelToken()
        return await _run_cancellable(cancel, self._reading(self._embed_pending_sync), documents, progress, cancel)

    def _embed_pending_sync(
        self,
        documents: Sequence[Document] | None,
        progress: ProgressCallback | None,
        cancel: CancelToken | None,
    ) -> int:
        if documents is None:
            documents = [d for d in docs.list_documents(self.store) if d.index_state == "text"]
        current = docs.get_documents(self.store, [d.id for d in documents])
        pending = docs.chunks_missing_vectors(self.store, current)  # (owner, chunk id, text)
        with_pending = {owner.generation for owner, _, _ in pending}
        # Text-only documents with nothing pending got their vectors before an interruption.
        docs.mark_hybrid(self.store, [d for d in current if d.index_state == "text" and d.generation not in with_pending])
        if not pending:
            return 0
        embedder = self.embedder
        identity = embedder.identity
        self.store.ensure_vector_table(identity.provider, identity.model, identity.vector_dim)
        remaining = Counter(owner.generation for owner, _, _ in pending)
        total = len(pending)
        # Batches span documents: many small documents embed as efficiently as one big one,
        # and each batch is one store write.
        for start in range(0, total, VECTOR_WRITE_BATCH):
            batch = pending[start : start + VECTOR_WRITE_BATCH]

            def forward(p: Progress, offset: int = start, source: str = batch[0][0].uri) -> None:
                report(progress, Progress(Stage.EMBEDDING, source, offset + p.done, total))

            vectors = embedder.embed_documents([text for _, _, text in batch], progress=forward, cancel=cancel)
            check_cancelled(cancel)
            docs.add_vectors(self.store, [owner for owner, _, _ in batch], [cid for _, cid, _ in batch], vectors)
            finished: dict[str, Document] = {}
            for owner, _, _ in batch:
                remaining[owner.generation] -= 1
                if remaining[owner.generation] == 0:
                    finished[owner.generation] = owner
            docs.mark_hybrid(self.store, list(finished.values()))
            for owner in finished.values():
                report(progress, Progress(Stage.DONE, owner.uri, message="searchable (hybrid)"))
        self.store.maintain_indexes()
        return total

    async def maintain_indexes(self, *, force: bool = False) -> bool:
        """Fold newly written rows into the indexes once enough have piled up (see
        ``Store.maintain_indexes``); ingest and embedding passes call it themselves."""
        if self.is_read_only:
            return False
        return await self._store_thread(self.store.maintain_indexes, force=force)

    async def rebuild(
        self,
        *,
        embeddings: EmbeddingsConfig | None = None,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> int:
        """Re-embed every chunk with ``embeddings`` (default: the configured embedder).

        The new vectors are computed first with the store untouched: searches keep using the
        old vectors meanwhile, and a cancel or a failure (an embedding server gone) leaves the
        old vectors and the recorded embedder exactly as they were, never a half-rebuilt store.
        Only when every chunk has its new vector are the vectors replaced (one short write
        pass), and from then on this client embeds queries with the new embedder
        (``config.embeddings`` is updated). Returns how many chunks were embedded.
        """
        cancel = cancel or CancelToken()
        return await _run_cancellable(cancel, self._reading(self._rebuild_sync), embeddings, progress, cancel)

    def _rebuild_sync(
        self, embeddings: EmbeddingsConfig | None, progress: ProgressCallback | None, cancel: CancelToken
    ) -> int:
        import numpy as np

        cfg = embeddings or self.config.embeddings
        embedder = self.embedder if embeddings is None else self._create_embedder(cfg)
        snapshot = docs.list_documents(self.store)
        chunks = docs.chunks_missing_vectors(self.store, snapshot, include_embedded=True)
        total = len(chunks)
        computed: list[Any] = []
        for start in range(0, total, VECTOR_WRITE_BATCH):
            batch = chunks[start : start + VECTOR_WRITE_BATCH]

            def forward(p: Progress, offset: int = start, source: str = batch[0][0].uri) -> None:
                report(progress, Progress(Stage.EMBEDDING, source, offset + p.done, total))

            computed.append(embedder.embed_documents([text for _, _, text in batch], progress=forward, cancel=cancel))
            check_cancelled(cancel)
        check_cancelled(cancel)
        identity = embedder.identity
        # The swap: from here on nothing checks cancellation (a few appends; seconds). The
        # store's writer lock is held throughout, so an embedding pass on another thread (the
        # app's queue) cannot write old-model vectors between the drop and the new table.
        with self.store._write_lock:
            self.store.drop_vectors()
            self.store.ensure_vector_table(identity.provider, identity.model, identity.vector_dim)
            for start, vectors in zip(range(0, total, VECTOR_WRITE_BATCH), computed, strict=True):
                batch = chunks[start : start + VECTOR_WRITE_BATCH]
                docs.add_vectors(self.store, [o for o, _, _ in batch], [cid for _, cid, _ in batch], np.asarray(vectors))
            docs.mark_hybrid(self.store, snapshot)
            if embeddings is not None and embedder is not self._embedder:
                # the old embedder is not closed: a search on another thread may still hold it
                self._embedder = embedder
                self.config.embeddings = cfg
            # documents written while the vectors were computed: embedded with the new model
            added = self._embed_pending_sync(None, progress, None)
        self.store.maintain_indexes()
        return total + added

    # --- search ---------------------------------------------------------------------------

    async def search(
        self,
        query: str,
        limit: int | None = None,
        search_type: SearchType = "hybrid",
        filter: str | None = None,
        *,
        document_ids: Sequence[str] | None = None,
    ) -> list[SearchResult]:
        return await self._store_thread(
            functools.partial(self.search_sync, query, limit, search_type, filter, document_ids=document_ids)
        )

    def search_sync(
        self,
        query: str,
        limit: int | None = None,
        search_type: SearchType = "hybrid",
        filter: str | None = None,
        *,
        document_ids: Sequence[str] | None = None,
    ) -> list[SearchResult]:
        """``document_ids`` (e.g. a collection's) restricts the search; with ``filter`` too,
        only documents matching both are searched."""
        from haiku.rag.search.hybrid import search_chunks

        limit = self.config.search.limit if limit is None else limit
        # Lone surrogates (undecodable bytes in a command line) break the tokenizers.
        query = query.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        scope = docs.document_ids_matching(self.store, filter) if filter else None
        if document_ids is not None:
            allowed = set(document_ids)
            scope = [i for i in (scope if scope is not None else document_ids) if i in allowed]
        document_ids = scope
        vector = None
        if search_type in ("hybrid", "vector") and self._has_vectors():
            # embedded inside search_chunks, while the full-text arm runs
            vector = functools.partial(self.embedder.embed_query, query)
        elif search_type == "vector":
            return []
        fusion = self.config.search.fusion
        return search_chunks(
            self.store,
            query,
            query_vector=vector,
            search_type=search_type,
            limit=limit,
            document_ids=document_ids,
            rrf_k=self.config.search.rrf_k,
            candidate_factor=self.config.search.candidate_factor,
            fts_weight=fusion.fts_weight,
            vector_weight=fusion.vector_weight,
            fts_pool=fusion.fts_pool,
            vector_pool=fusion.vector_pool,
            fusion=fusion.method,
            fts_only_share=fusion.fts_only_share,
            page_share=self.config.search.page_share,
            name_weight=self.config.search.name_weight,
            reranker=self._reranker_or_none(),
            rerank_pool=self.config.search.rerank.pool,
        )

    def _reranker_or_none(self) -> Any:
        # A misconfigured reranker (no key, no URL) must not fail searches: say why, search on.
        try:
            return self.reranker
        except ValueError as exc:
            log.warning("reranking is off for this search: %s", exc)
            return None

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

    async def expand_context(self, results: list[SearchResult], max_chars: int | None = None) -> list[SearchResult]:
        from haiku.rag.search.expansion import expand_context

        budget = self.config.search.max_context_chars if max_chars is None else max_chars
        return await self._store_thread(expand_context, self.store, results, budget)

    # --- collections ------------------------------------------------------------------------
    # Named sets of documents stored in the library (see ``haiku.rag.collections``).

    async def list_collections(self) -> list[Collection]:
        return await asyncio.to_thread(self._reading(collections.list_collections), self.store)

    async def get_collection(self, name: str) -> Collection:
        return await asyncio.to_thread(self._reading(collections.get_collection), self.store, name)

    async def create_collection(self, name: str, document_ids: Sequence[str] = ()) -> Collection:
        return await asyncio.to_thread(self._reading(collections.create_collection), self.store, name, list(document_ids))

    async def add_to_collection(self, name: str, document_ids: Sequence[str], *, create: bool = False) -> Collection:
        return await asyncio.to_thread(
            self._reading(functools.partial(collections.add_to_collection, self.store, name, list(document_ids), create=create))
        )

    async def remove_from_collection(self, name: str, document_ids: Sequence[str]) -> Collection:
        return await asyncio.to_thread(self._reading(collections.remove_from_collection), self.store, name, list(document_ids))

    async def rename_collection(self, old: str, new: str) -> Collection:
        return await asyncio.to_thread(self._reading(collections.rename_collection), self.store, old, new)

    async def delete_collection(self, name: str) -> Collection:
        return await asyncio.to_thread(self._reading(collections.delete_collection), self.store, name)

    async def collection_document_ids(self, name: str) -> list[str]:
        """The live document ids of collection ``name``: the one resolver for a scope."""
        return await asyncio.to_thread(self._reading(collections.collection_document_ids), self.store, name)

    async def collections_of(self, document_id: str) -> list[str]:
        return await asyncio.to_thread(self._reading(collections.collections_of), self.store, document_id)

    # --- visual grounding -----------------------------------------------------------------

    async def visualize(
        self,
        document_id: str,
        matched: list[Box],
        context: list[Box] | None = None,
        page_numbers: list[int] | None = None,
        *,
        dpi: float = 150,
    ) -> list[PageImage]:
        """Render the pages the boxes fall on, from the stored file, with the boxes in pixels."""

        def render() -> list[PageImage]:
            document = docs.get_document(self.store, document_id)
            if document.mime_type != "application/pdf":
                return []
            data = docs.get_source_bytes(self.store, document)
            pages = pages_to_render(matched, context or [], page_numbers or [])
            return [render_page(data, p, matched=matched, context=context or [], dpi=dpi) for p in pages]

        return await self._store_thread(render)

    async def visualize_chunk(self, chunk: str | Chunk | SearchResult, *, dpi: float = 150) -> list[PageImage]:
        """Pages of a chunk (by id), or of a search result, with its boxes highlighted."""
        if isinstance(chunk, str):
            chunk = await self.get_chunk(chunk)
        context = chunk.context_boxes if isinstance(chunk, SearchResult) else []
        return await self.visualize(chunk.document_id, chunk.boxes, context, chunk.page_numbers, dpi=dpi)

    # --- information ----------------------------------------------------------------------

    async def info(self) -> dict[str, Any]:
        def collect() -> dict[str, Any]:
            from haiku.rag.store import schema

            documents = docs.list_documents(self.store)
            chunks = self.store.table(schema.CHUNKS).count_rows()
            vectors = self.store.table(schema.CHUNK_VECTORS).count_rows() if self._has_vectors() else 0
            return {
                "location": self.location,
                "read_only": self.is_read_only,
                "schema_version": self.store.get_setting("schema_version"),
                "embedder": self.store.embedder_identity,
                "documents": len(documents),
                "documents_text_only": sum(1 for d in documents if d.index_state == "text"),
                "chunks": chunks,
                "vectors": vectors,
                "pages": sum(d.page_count for d in documents),
            }

        return await self._store_thread(collect)


def installed_embedders() -> list[tuple[str, str, int]]:
    """(provider, model, vector size) of the embedders that run offline from installed
    packages, for a settings screen; others are reached over HTTP (Ollama, OpenAI-compatible)."""
    from haiku.rag.embeddings.local import MODEL_NAME, VECTOR_DIM

    return [("local", MODEL_NAME, VECTOR_DIM)]


def _add_bibliographic(new: docs.NewDocument, filename: str, replaces: Document | None = None) -> None:
    """Authors, year, DOI... read from a PDF itself, unless the caller gave them (Zotero) or
    the person edited them (kept from the version this one replaces)."""
    from haiku.rag.bibliography import METADATA_KEY, USER_SOURCE

    edited = replaces.metadata.get(METADATA_KEY) if replaces is not None else None
    if METADATA_KEY not in new.metadata and isinstance(edited, dict) and edited.get("source") == USER_SOURCE:
        new.metadata[METADATA_KEY] = edited
        return
    if new.mime_type != "application/pdf" or METADATA_KEY in new.metadata:
        return
    from haiku.rag.pdf_metadata import extract_pdf_metadata

    try:
        record = extract_pdf_metadata(new.source_bytes, filename=filename)
    except Exception:  # metadata is a bonus: never fail an ingest over it
        log.warning("could not read bibliographic metadata of %s", filename, exc_info=True)
        return
    if record is not None:
        new.metadata[METADATA_KEY] = record.to_metadata()


def _source_size(source: str | os.PathLike[str] | ImportItem) -> int:
    """Bytes of a source, to start a batch's largest parses first (0 when unknown)."""
    if isinstance(source, ImportItem):
        return len(source.content)
    try:
        return os.stat(source).st_size
    except (OSError, ValueError):
        return 0


def _local_path(source: str | os.PathLike[str]) -> Path:
    text = os.fspath(source)
    if text.startswith("file://"):
        from urllib.parse import unquote, urlparse

        text = unquote(urlparse(text).path)
    elif "://" in text:
        raise SourceNotFoundError(f"{text}: only local files and folders can be added for now", source=text)
    return Path(text).expanduser()


async def _run_cancellable(cancel: CancelToken, func: Any, *args: Any) -> Any:
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
