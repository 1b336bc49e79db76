"""Ingestion: a file, a folder, bytes, text or a batch of them, parsed (in the isolated parse
worker), written (searchable by full text at once) and then embedded (hybrid).

Every path goes through one ``IngestSource``: ``parse_source`` skips an unchanged source
(unless forced: an explicit re-ingest, e.g. after a parser or OCR fix), parses it and adds its bibliographic record; ``ingest_source`` writes it alone, and
``import_documents`` writes a batch at a time.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from collections.abc import Iterable, Sized
from pathlib import Path
from typing import Any, Literal

from haiku.rag.bounds import bound_stored_fields
from haiku.rag.client.base import ClientBase, local_path, run_cancellable
from haiku.rag.client.bibliography import add_bibliographic, reads_bibliographic
from haiku.rag.client.documents import get_document
from haiku.rag.client.maintenance import embed_pending, maintain_indexes
from haiku.rag.client.sources import (
    ImportItem,
    IngestOutcome,
    IngestSource,
    read_source,
    source_size,
)
from haiku.rag.errors import IngestError, SourceNotFoundError
from haiku.rag.ingest.isolation import parse_document
from haiku.rag.ingest.pipeline import content_hash, iter_source_files
from haiku.rag.operations import (
    CancelToken,
    Progress,
    ProgressCallback,
    Stage,
    check_cancelled,
    report,
)
from haiku.rag.store import documents as docs
from haiku.rag.store.documents import NewDocument
from haiku.rag.store.models import Document

log = logging.getLogger("haiku.rag")

COMPACT_AFTER_DOCUMENTS = 256  # an import that wrote this many compacts the store after it

Prepared = IngestOutcome | tuple[NewDocument, Document | None]


async def create_document(
    client: ClientBase,
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
    source = IngestSource(data, name, uri, title, metadata)
    outcome = await client._store_thread(ingest_source, client, source, None, None, embed)
    if outcome.status == "failed":
        raise IngestError(outcome.reason or "ingest failed", source=uri)
    assert outcome.document is not None
    if embed and outcome.document.index_state == "text":
        # unchanged, but its vectors were never completed (an interrupted earlier pass)
        await embed_pending(client, [outcome.document])
        return await get_document(client, outcome.document.id)
    return outcome.document


async def create_document_from_source(
    client: ClientBase,
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
    path = local_path(source)
    if path.is_dir():
        outcomes = await add_source(client, path, progress=progress, cancel=cancel, embed=embed)
        return [o.document for o in outcomes if o.document is not None]
    outcome = await ingest_file(
        client, path, title=title, metadata=metadata, password=password, progress=progress, cancel=cancel, embed=embed
    )
    if outcome.document is None:
        raise IngestError(outcome.reason or "ingest failed", source=outcome.source)
    return outcome.document


async def ingest_file(
    client: ClientBase,
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    metadata: dict[str, Any] | None = None,
    password: str | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    embed: bool = True,
    force: bool = False,
) -> IngestOutcome:
    """Ingest one file; a bad file becomes a ``failed`` outcome, never an exception.

    A file stored unchanged is ``unchanged`` and nothing is written, unless ``force``: then
    it is parsed again and replaces the stored document in place (same id), the way a
    changed file does."""
    cancel = cancel or CancelToken()

    def work() -> IngestOutcome:
        file = Path(path)
        report(progress, Progress(Stage.READING, str(file)))
        source = read_source(file, client.config, title=title, metadata=metadata, password=password)
        if isinstance(source, IngestOutcome):
            return source
        return ingest_source(client, source, progress, cancel, force=force)

    return await _ingest_one(client, work, progress, cancel, embed)


async def ingest_bytes(
    client: ClientBase,
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
    source = IngestSource(data, filename, uri, title, metadata)
    return await _ingest_one(
        client, functools.partial(ingest_source, client, source, progress, cancel), progress, cancel, embed
    )


async def _ingest_one(
    client: ClientBase, work: Any, progress: ProgressCallback | None, cancel: CancelToken, embed: bool
) -> IngestOutcome:
    """Run one source's ``work`` (read, parse, write) in a thread, then embed its chunks."""
    started = time.perf_counter()
    outcome = await run_cancellable(cancel, client._reading(work))
    outcome.seconds = time.perf_counter() - started
    if embed and outcome.document is not None and outcome.document.index_state == "text":
        await embed_pending(client, [outcome.document], progress=progress, cancel=cancel)
        outcome.document = await get_document(client, outcome.document.id)
    return outcome


async def add_source(
    client: ClientBase,
    source: str | os.PathLike[str],
    *,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    embed: bool = True,
) -> list[IngestOutcome]:
    """Ingest a file or every file below a folder, going on after failures (see
    ``import_documents``)."""
    path = local_path(source)
    if not path.exists() and not path.is_symlink():
        raise SourceNotFoundError(f"{path} does not exist", source=str(path))
    files = iter_source_files(path) if path.is_dir() else [path]
    return await import_documents(client, files, progress=progress, cancel=cancel, embed=embed)


async def import_documents(
    client: ClientBase,
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
    work = client._reading(functools.partial(_import_sync, client))
    outcomes = await run_cancellable(cancel, work, sources, progress, cancel)
    if embed:
        to_embed = [o.document for o in outcomes if o.document and o.document.index_state == "text"]
        await embed_pending(client, to_embed, progress=progress, cancel=cancel)
        ids = [o.document.id for o in outcomes if o.document]
        current = {d.id: d for d in await client._store_thread(docs.get_documents, client.store, ids)}
        for o in outcomes:
            if o.document is not None:
                o.document = current.get(o.document.id, o.document)
    # Compaction after a large import: its batches' fragments merged and the index lag
    # folded in once (a small one waits until enough rows lag, see ``maintain_indexes``).
    written = sum(1 for o in outcomes if o.status in ("ingested", "updated"))
    await maintain_indexes(client, force=written >= COMPACT_AFTER_DOCUMENTS)
    return outcomes


def _import_sync(
    client: ClientBase,
    sources: Iterable[str | os.PathLike[str] | ImportItem],
    progress: ProgressCallback | None,
    cancel: CancelToken,
) -> list[IngestOutcome]:
    from haiku.rag.ingest.isolation import largest_first, parse_ahead, parse_workers
    from haiku.rag.store.batch import DocumentBatch

    store = client.store
    total = len(sources) if isinstance(sources, Sized) else 0
    batch = DocumentBatch(store)
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
            store.maintain_indexes()  # no-op until enough rows lag the indexes

    def prepare(indexed: tuple[int, str | os.PathLike[str] | ImportItem]) -> tuple[int, Prepared, float]:
        check_cancelled(cancel)
        started = time.perf_counter()
        index, source = indexed
        return index, _prepare_import(client, source, progress, cancel), time.perf_counter() - started

    # The next files are parsed (each in its own worker process) while this one is written;
    # with more than one worker, the largest files of a list go first (``largest_first``).
    workers = parse_workers(client.config.processing)
    order = largest_first(sources, source_size) if workers > 1 else enumerate(sources)
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
                outcome.document, _ = docs.write_document(store, new, replaces=existing)
                finished += 1
                report(progress, Progress(Stage.DONE, outcome.source, finished, total, "searchable (text)"))
            else:
                land(batch.add(index, new))
            outcome.seconds = parse_seconds + time.perf_counter() - write_started
    land(batch.flush())
    return [outcomes[index] for index in sorted(outcomes)]


def _prepare_import(
    client: ClientBase, source: str | os.PathLike[str] | ImportItem, progress: ProgressCallback | None, cancel: CancelToken
) -> Prepared:
    if isinstance(source, ImportItem):
        return parse_source(client, source.source(), progress, cancel)
    path = Path(os.fspath(source))
    report(progress, Progress(Stage.READING, str(path)))
    read = read_source(path, client.config)
    if isinstance(read, IngestOutcome):
        return read
    return parse_source(client, read, progress, cancel)


def ingest_source(
    client: ClientBase,
    source: IngestSource,
    progress: ProgressCallback | None,
    cancel: CancelToken | None,
    embed: bool = False,
    *,
    force: bool = False,
) -> IngestOutcome:
    """Parse and write one source. With ``embed`` the vectors are computed before the write
    and written with the document, in its transaction (see ``docs.write_document``).
    ``force`` parses and writes an unchanged source too (see ``parse_source``)."""
    prepared = parse_source(client, source, progress, cancel, force=force)
    if isinstance(prepared, IngestOutcome):
        return prepared
    new, existing = prepared
    store = client.store
    vectors = None
    if embed:
        embedder = client.embedder
        identity = embedder.identity
        # Before the embedding: a store built with another model refuses without the work.
        store.ensure_vector_table(identity.provider, identity.model, identity.vector_dim)
        vectors = embedder.embed_documents([chunk.embed_text for chunk in new.chunks], cancel=cancel)
        check_cancelled(cancel)
    document, _ = docs.write_document(store, new, replaces=existing, vectors=vectors)
    report(progress, Progress(Stage.DONE, source.uri, message="searchable (hybrid)" if embed else "searchable (text)"))
    if embed:
        store.maintain_indexes()  # a no-op until enough rows lag the indexes
    same = None if existing else docs.find_same_content(store, document.content_hash, document.id)
    return IngestOutcome(source.uri, "updated" if existing else "ingested", document=document, same_as=same)


def parse_source(
    client: ClientBase,
    source: IngestSource,
    progress: ProgressCallback | None,
    cancel: CancelToken | None,
    *,
    force: bool = False,
) -> Prepared:
    """The parsed document and the one it replaces, or the outcome when there is nothing
    to write (unchanged, or a file that cannot be parsed). ``force`` parses an unchanged
    source again (an explicit re-ingest: a parser or OCR fix reaches it), to replace the
    stored document in place."""
    uri = source.uri
    existing = docs.find_document_by_uri(client.store, uri)
    if not force and existing is not None and existing.content_hash == content_hash(source.data):
        report(progress, Progress(Stage.DONE, uri, message="unchanged"))
        return IngestOutcome(uri, "unchanged", document=existing)
    read = reads_bibliographic(source.metadata, existing)
    try:
        new = parse_document(
            source.data,
            filename=source.filename,
            uri=uri,
            config=client.config,
            title=source.title,
            metadata=source.metadata,
            password=source.password,
            progress=progress,
            cancel=cancel,
            bibliographic=read,
        )
    except IngestError as exc:
        log.info("ingest failed for %s: %s", uri, exc)
        return IngestOutcome(uri, "failed", category=exc.category, reason=str(exc))
    check_cancelled(cancel)
    add_bibliographic(new, existing, client.config.bibliography, read=read)
    bound_stored_fields(new)  # a 5 MB title is not stored whole (haiku.rag.bounds)
    report(progress, Progress(Stage.STORING, uri, total=len(new.chunks)))
    return new, existing
